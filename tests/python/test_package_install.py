"""The framework installed as a package in a team's own dbt project (tests/consumer_project):
`dbt deps` from a local path, the team's source landed, its model of the framework's kind built,
corrected late, and restated by a backfill, with the `pipeline` commands run against that
project (DBT_PROJECT_DIR). None of this repository's examples is built there."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.paths import FRAMEWORK_DIR, PROFILES_DIR

DBT = Path(sys.executable).parent / "dbt"
DRIVER = Path(__file__).with_name("consumer_driver.py")

# the team's project runs in a process (a JVM) of its own: scripts/test.sh runs it beside the main session
pytestmark = pytest.mark.beside
# the raw key is `id`; the team's model calls it ticket_id (its scope maps the two)
COLUMNS = "id,queue,opened_at,amount,updated_at,is_deleted"
DAY_1 = [
    "1,Billing,2025-03-01 09:00:00,10.00,2025-03-01 09:00:00,false",
    "2,billing,2025-03-02 09:00:00,20.00,2025-03-02 09:00:00,false",
    "3,Tech,2025-03-03 09:00:00,30.00,2025-03-03 09:00:00,false",
    "4,tech,2025-03-04 09:00:00,40.00,2025-03-04 09:00:00,false",
    "5,tech,2025-03-05 09:00:00,50.00,2025-03-05 09:00:00,false",
    "6,tech,,60.00,2025-03-05 10:00:00,false",  # no opened_at: quarantined
]
DAY_2 = [
    "2,billing,2025-03-02 09:00:00,25.00,2025-03-06 12:00:00,false",  # corrected, an older date
    "3,Tech,2025-03-03 09:00:00,30.00,2025-03-06 12:00:00,true",  # deleted
    "7,tech,2025-03-06 09:00:00,70.00,2025-03-06 09:00:00,false",  # new
    "7,tech,2025-03-06 09:00:00,70.00,2025-03-06 09:00:00,false",  # its duplicate
    "5,tech,2025-03-05 09:00:00,99.00,2025-03-05 08:00:00,false",  # stale: older than the current
    "6,tech,2025-03-05 10:00:00,60.00,2025-03-06 13:00:00,false",  # the quarantined one, fixed
]


def _consumer_project(tmp: Path) -> Path:
    project = tmp / "helpdesk_analytics"
    shutil.copytree(FRAMEWORK_DIR / "tests" / "consumer_project", project)
    (project / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(FRAMEWORK_DIR)}]}))
    # the team's own profile: this repository's targets (Jinja text, as dbt reads it) under its name
    ours = (PROFILES_DIR / "profiles.yml").read_text()
    assert ours.count("\nbackfill_safe:\n") == 1
    (project / "profiles").mkdir()
    (project / "profiles" / "profiles.yml").write_text(ours.replace("\nbackfill_safe:\n", "\nhelpdesk_analytics:\n"))
    return project


def test_a_teams_project_installs_the_framework_and_gets_its_guarantees(tmp_path: Path):
    project = _consumer_project(tmp_path)
    env = {**os.environ, "DBT_PROJECT_DIR": str(project), "DBT_PROFILES_DIR": str(project / "profiles"),
           "PIPELINE_STATE_DIR": str(tmp_path / "state"), "DBT_USE_COLORS": "false",
           "PIPELINE_ICEBERG_JAR": str(FRAMEWORK_DIR / ".venv" / "iceberg" / "iceberg-spark-runtime.jar"),
           "PIPELINE_JVM_JAR": str(FRAMEWORK_DIR / ".venv" / "jars" / "backfill-safe-jvm.jar")}
    env.pop("DBT_TARGET_PATH", None)
    deps = subprocess.run([str(DBT), "deps"], cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert deps.returncode == 0, deps.stdout[-3000:] + deps.stderr[-2000:]
    assert (project / "dbt_packages" / "backfill_safe" / "macros").is_dir()

    files = tmp_path / "files"
    files.mkdir()
    (files / "tickets.csv").write_text("\n".join([COLUMNS, *DAY_1]) + "\n")
    (files / "tickets-2.csv").write_text("\n".join([COLUMNS, *DAY_2]) + "\n")
    done = subprocess.run([sys.executable, str(DRIVER), str(files / "tickets.csv"), str(files / "tickets-2.csv")],
                          cwd=project, env=env, capture_output=True, text=True, timeout=1500)
    [result] = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")] or [None]
    assert done.returncode == 0 and result, done.stdout[-5000:] + done.stderr[-5000:]
    outcome = json.loads(result.removeprefix("RESULT "))

    assert outcome["project_dir"] == str(project)
    assert outcome["land_1"] == 0 and outcome["land_2"] == 0
    for build in ("build_1", "build_2"):
        assert outcome[build].pop("fct_ticket") == "success", outcome[build]
        # the team's plain Parquet table, built again by the second build (dropped and created)
        assert outcome[build].pop("dim_date") == "success", outcome[build]
        assert set(outcome[build].values()) == {"success", "pass"}, outcome[build]
    # the framework's hooks and tests ran on the team's model, the quarantine check on its source
    # the team's dbt unit test of its model of the kind ran and passed in both builds
    assert all(outcome[b].get("fct_ticket_keeps_one_row_per_ticket_and_flags_the_deleted_ones") == "pass"
               for b in ("build_1", "build_2")), outcome
    for name in ("backfill_safe-on-run-start-0", "backfill_safe-on-run-end-0",
                 "backfill_safe_reconcile_daily_totals_fct_ticket_", "backfill_safe_no_unloaded_changes_fct_ticket_",
                 "backfill_safe_source_landed_rows_are_loaded_or_quarantined_helpdesk_tickets_"):
        assert name in outcome["build_2"], (name, outcome["build_2"])

    # day 1: the ticket without opened_at held back, queues as the model writes them
    assert outcome["rows_1"] == [[1, "2025-03-01", "billing", "10.00"], [2, "2025-03-02", "billing", "20.00"],
                                 [3, "2025-03-03", "tech", "30.00"], [4, "2025-03-04", "tech", "40.00"],
                                 [5, "2025-03-05", "tech", "50.00"]]
    # day 2: the late correction of an older date, the delete, the new ticket once, the stale
    # version ignored, the fixed ticket loaded
    expected = [[1, "2025-03-01", "billing", "10.00"], [2, "2025-03-02", "billing", "25.00"],
                [4, "2025-03-04", "tech", "40.00"], [5, "2025-03-05", "tech", "50.00"],
                [6, "2025-03-05", "tech", "60.00"], [7, "2025-03-06", "tech", "70.00"]]
    assert outcome["rows_2"] == expected
    # the plain table rebuilt from the second day's fact (2025-03-01 a Saturday)
    assert outcome["days_2"] == [["2025-03-01", True, 1], ["2025-03-02", True, 1], ["2025-03-04", False, 1],
                                 ["2025-03-05", False, 2], ["2025-03-06", False, 1]]
    assert outcome["watermark"] == "2025-03-06 13:00:00"
    # the materialization's work after the MERGE: the watermark stayed below the
    # quarantined version on day 1; day 2's MERGE rewrote the four dates it touched only
    assert outcome["run_records"] == [["success", "2025-03-05 09:00:00", 1, 5, 0, 5],
                                      ["success", "2025-03-06 13:00:00", 1, 3, 2, 4]]
    # the control tables in the team's warehouse; none of the repository's examples built there
    assert {"control.etl_watermark", "control.run_records", "control.landed_files"} <= set(outcome["tables"])
    assert [t for t in outcome["tables"] if t.startswith("analytics_marts.")] == [
        "analytics_marts.dim_date", "analytics_marts.fct_ticket"]
    assert [t for t in outcome["tables"] if t.startswith("helpdesk_raw.")] == ["helpdesk_raw.tickets"]
    manifest = json.loads((project / "target" / "manifest.json").read_text())
    built = sorted(n["name"] for n in manifest["nodes"].values() if n["resource_type"] in ("model", "seed"))
    assert built == ["audit_quarantined_rows", "dim_date", "fct_ticket", "stg_helpdesk__tickets"], built
    # no test of the package's examples attached to the team's models of the same name (dim_date)
    tests = [n for n in manifest["nodes"].values() if n["resource_type"] == "test"]
    assert [t["unique_id"] for t in tests if t["package_name"] != "helpdesk_analytics"] == [
        "test.backfill_safe.no_watermark_drift"], tests
    assert not [c for t in tests for c in [t.get("column_name")] if c == "date_key"], tests
    assert not [s for s in manifest["sources"] if not s.startswith("source.helpdesk_analytics.")]

    # explained before the second build: the MERGE's read of the team's table, planned, and the
    # landed tickets it read to find its scope; the build after it still did all the work (above)
    assert outcome["explain"] == 0 and outcome["explain_left_the_table"]
    [explained] = outcome["explained"]
    merge = [s for s in explained["scans"] if s["statement"] == "merge" and s["role"] == "target"]
    assert merge and all(s["table"] == "analytics_marts.fct_ticket" and 0 < s["data_files"] <= s["table_data_files"]
                         for s in merge), explained
    assert any(r["table"] == "helpdesk_raw.tickets" and r["rows"] > 0 for r in explained["ran"]), explained
    assert outcome["restate_dry_run"] == 0  # the audit covers the team's model: nothing late
    # the dual run: equal to a full refresh of the model, key by key; the status page shows it
    assert outcome["compare_unrouted"] == 2 and outcome["unrouted_left_the_table"]
    assert outcome["compare"] == 0
    assert {k: outcome["compared"][k] for k in ("identical", "modified", "missing", "extra", "equal")} == {
        "identical": 6, "modified": 0, "missing": 0, "extra": 0, "equal": True}, outcome["compared"]
    assert outcome["report"] == 0 and outcome["report_names_the_model"]
    # the backfill restated the damaged date from the current state, published
    assert outcome["rows_damaged"] != expected
    assert outcome["backfill"] == 0
    assert outcome["rows_3"] == expected
    assert outcome["backfill_runs"] == [["published", "restate after a bad deploy"]]
