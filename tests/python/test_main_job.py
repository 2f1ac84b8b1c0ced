"""The README's first command, in process on a small sample (the session's `main_job_sample`,
which test_cluster compares with the same job on the cluster)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from helpers import MainJobRun
from pipeline.paths import PROJECT_DIR

# reads the main job's sample that test_cluster compares with the cluster: scripts/test.sh runs both
# beside the main session, so that the sample is run once
pytestmark = pytest.mark.beside


def test_main_job_builds_lands_a_day_of_changes_and_reports_a_clean_reconciliation(main_job_sample: MainJobRun):
    text = main_job_sample.output
    assert main_job_sample.exit_code == 0, text
    assert "incremental run after landing 2025-01-03" in text
    for model in ("fct_order_item", "fct_orders", "dim_customer", "dim_product", "dim_channel", "dim_date"):
        assert model in text
    reconciliation, freshness = text.split("reconciliation")[1].split("freshness against the sample's clock")
    statuses = re.findall(r"│ (pass|fail|error|warn)\s+│", reconciliation)
    # two reconciliation tests per declared model: the shop's two facts and two aggregates over
    # them, the rides example's fct_trip and its aggregate (empty in the shop's sample: all pass)
    assert statuses == ["pass"] * 12, reconciliation
    for model in ("fct_trip", "agg_daily_revenue", "agg_customer_orders", "agg_daily_city_trips"):
        assert f"reconcile_daily_totals_{model}_" in reconciliation, model
    # the generator writes no bad rows: nothing quarantined, and the count checks passed
    assert "no landed row was set aside" in text
    # a step line per build, counted from dbt's results
    for step in ("first build", "incremental build"):
        assert re.search(rf"{step}: \d+ models, 1 seeds, 4 unit tests, \d+ data tests \(0 warned\)", text), text
    # freshness against the sample's clock (the end of its last day, 2025-01-04 00:00): the shop's
    # sources were updated hours before it (within warn_after, 1 day), the rides example's got no
    # rows; no source is reported stale for being old by design
    assert "2025-01-04 00:00 UTC" in freshness
    for source in ("orders", "order_items", "customers", "products"):
        assert re.search(rf"shop\.{source}\s+│ pass\s+│ 2025-01-03 [\d:.+]+\s+│ \d+\.\d h", freshness), freshness
    for source in ("trips", "drivers"):
        assert re.search(rf"rides\.{source}\s+│ nothing landed yet", freshness), freshness
    assert not re.search(r"│ (error|warn)\s+│", freshness), freshness
    for pipeline in ("fct_order_item", "fct_orders", "dim_customer", "dim_product"):
        assert re.search(rf"pipeline {pipeline}\s+│ watermark\s+│ 2025-01-03 [\d:.]+\s+│ \d+\.\d h", freshness), freshness

    # every mart's yml documents exactly its table's columns, in order (merge_source relies on it)
    import yaml

    from pipeline import paths

    marts = yaml.safe_load((paths.PROJECT_DIR / "models" / "marts" / "_marts__models.yml").read_text())["models"]
    assert sorted(m["name"] for m in marts) == sorted(main_job_sample.columns)
    for model in marts:
        assert main_job_sample.columns[model["name"]] == [c["name"] for c in model["columns"]], model["name"]


@pytest.mark.fast
def test_the_main_job_prints_its_steps_and_sends_every_other_line_to_its_log_file(tmp_path):
    """`main` as the terminal sees it, without Spark: a stand-in for `run` writes what the JVM
    (a child process inheriting the descriptors), dbt (Python's stdout) and a warning (stderr)
    would, and prints a step through the console it is given."""
    script = """
import subprocess, sys
from sample import main_job

def run(config, console):
    subprocess.run(["echo", "26/11/27 WARN Utils: from the JVM"], check=True)
    print("17:16:54  Running with dbt=1.11")
    print("a warning", file=sys.stderr)
    console.print("[bold]landed[/] days 2025-01-01 .. 2025-01-02")
    return 0

main_job.run = run
sys.exit(main_job.main())
"""
    env = {**os.environ, "PIPELINE_STATE_DIR": str(tmp_path), "PYTHONPATH": str(PROJECT_DIR / "scripts")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    log = tmp_path / "logs" / "main_job.log"
    assert done.stdout.splitlines() == [f"full logs (dbt, Spark): {log}", "landed days 2025-01-01 .. 2025-01-02"]
    assert done.stderr == ""
    assert sorted(log.read_text().splitlines()) == ["17:16:54  Running with dbt=1.11", "26/11/27 WARN Utils: from the JVM",
                                                    "a warning"]
