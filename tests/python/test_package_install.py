"""The framework installed in a team's own dbt project (tests/consumer_project) as
docs/guides/adopt-the-framework.md does it: its wheel installed by pip into a fresh virtual
environment of the project, `dbt deps`, the team's source landed, its model of the framework's
kind built, corrected late, compared, explained and restated by a backfill, with the `pipeline`
command of that environment run from the project's folder and no environment variable set.
None of this repository's examples reaches that project."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.paths import FRAMEWORK_DIR

DRIVER = Path(__file__).with_name("consumer_driver.py")

# the team's project runs in a process (a JVM) of its own: scripts/test.sh runs it beside the main session
pytestmark = pytest.mark.extended  # a virtual environment and a project of its own
# the raw key is `id`; the team's model calls it ticket_id (its scope maps the two)
COLUMNS = "id,queue,agent_id,opened_at,amount,updated_at,is_deleted"
DAY_1 = [
    "1,Billing,10,2025-03-01 09:00:00,10.00,2025-03-01 09:00:00,false",
    "2,billing,10,2025-03-02 09:00:00,20.00,2025-03-02 09:00:00,false",
    "3,Tech,11,2025-03-03 09:00:00,30.00,2025-03-03 09:00:00,false",
    "4,tech,11,2025-03-04 09:00:00,40.00,2025-03-04 09:00:00,false",
    "5,tech,12,2025-03-05 09:00:00,50.00,2025-03-05 09:00:00,false",  # its agent not landed yet
    "6,tech,12,,60.00,2025-03-05 10:00:00,false",  # no opened_at: quarantined
]
DAY_2 = [
    "2,billing,10,2025-03-02 09:00:00,25.00,2025-03-06 12:00:00,false",  # corrected, an older date
    "3,Tech,11,2025-03-03 09:00:00,30.00,2025-03-06 12:00:00,true",  # deleted
    "7,tech,11,2025-03-06 09:00:00,70.00,2025-03-06 09:00:00,false",  # new
    "7,tech,11,2025-03-06 09:00:00,70.00,2025-03-06 09:00:00,false",  # its duplicate
    "5,tech,12,2025-03-05 09:00:00,99.00,2025-03-05 08:00:00,false",  # stale: older than the current
    "6,tech,12,2025-03-05 10:00:00,60.00,2025-03-06 13:00:00,false",  # the quarantined one, fixed
]
# the tickets' assignees, which the team's mart (ticket_assignments) reads straight from the source
AGENT_COLUMNS = "agent_id,agent_name,team,updated_at,is_deleted"
AGENTS_1 = ["10,Ana,billing,2025-03-01 08:00:00,false", "11,Ben,tech,2025-03-01 08:00:00,false"]
AGENTS_2 = [
    "11,Benedict,tech,2025-03-06 11:00:00,false",  # a rename alone: no ticket changes with it
    "12,Cleo,tech,2025-03-06 10:00:00,false",  # the agent of tickets 5 and 6 arrives
]
AGENTS_3 = [
    # a rename dated before the mart's window (its watermark 2025-03-06 13:00 less a day)
    "10,Anabel,billing,2025-03-04 00:00:00,false",
    "11,Bobby,tech,2025-03-06 09:00:00,false",  # in the window, but older than Benedict: stale
]

def guide_install_steps() -> list[list[str]]:
    """The commands of the bash block of the guide's "1. Install", comments left out, with
    `python3.11` this Python and `../backfill-safe` this checkout."""
    guide = (FRAMEWORK_DIR / "docs" / "guides" / "adopt-the-framework.md").read_text()
    section = guide.split("\n## 1. Install\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    swap = {"python3.11": sys.executable, "../backfill-safe": str(FRAMEWORK_DIR)}
    return [[swap.get(word, word) for word in shlex.split(line.split("#")[0])]
            for line in block.splitlines() if line.split("#")[0].strip()]


def _installed_project(tmp: Path) -> tuple[Path, dict[str, str]]:
    """The team's project as the adoption guide sets it up: its files (profiles.yml and
    packages.yml included, as committed), then the guide's install commands run in its folder: a
    fresh virtual environment in `.venv`, this checkout installed into it by pip (which builds its
    wheel: the JVM classes compiled, the dbt package assembled), `dbt deps`. The environment
    of its commands carries no variable of this repository's (no PIPELINE_*, DBT_*, PYTHONPATH):
    what the team's commands find, they find from the project's folder."""
    project = tmp / "helpdesk_analytics"
    shutil.copytree(FRAMEWORK_DIR / "tests" / "consumer_project", project)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIPELINE_", "DBT_", "PYTHON", "VIRTUAL_ENV"))}
    for step in guide_install_steps():
        done = subprocess.run(step, cwd=project, env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (step, done.stdout[-3000:] + done.stderr[-3000:])
    return project, env


def test_a_teams_project_installs_the_framework_and_gets_its_guarantees(tmp_path: Path):
    project, env = _installed_project(tmp_path)
    installed = project / ".venv" / "lib" / "python3.11" / "site-packages"
    # the package dbt installed is the one pip put into the team's environment, jars included
    assert (project / "dbt_packages" / "backfill_safe").resolve() == installed / "backfill_safe"
    assert {p.name for p in (installed / "backfill_safe" / "jars").iterdir()} == {
        "backfill-safe-jvm.jar", "iceberg-spark-runtime.jar"}
    package_dir = subprocess.run([".venv/bin/pipeline", "package-dir"], cwd=project, env=env,
                                 capture_output=True, text=True, timeout=120)
    assert package_dir.returncode == 0 and package_dir.stdout.strip() == str(installed / "backfill_safe")

    files = tmp_path / "files"
    for day, name, columns, lines in (("day1", "tickets.csv", COLUMNS, DAY_1), ("day1", "agents.csv", AGENT_COLUMNS, AGENTS_1),
                                      ("day2", "tickets-2.csv", COLUMNS, DAY_2), ("day2", "agents-2.csv", AGENT_COLUMNS, AGENTS_2),
                                      ("day3", "agents-3.csv", AGENT_COLUMNS, AGENTS_3)):
        (files / day).mkdir(parents=True, exist_ok=True)
        (files / day / name).write_text("\n".join([columns, *lines]) + "\n")
    done = subprocess.run([".venv/bin/python", str(DRIVER), str(files)],
                          cwd=project, env=env, capture_output=True, text=True, timeout=1500)
    [result] = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")] or [None]
    assert done.returncode == 0 and result, done.stdout[-5000:] + done.stderr[-5000:]
    outcome = json.loads(result.removeprefix("RESULT "))
    print(json.dumps(outcome, indent=1))

    # the `pipeline` the team's environment installed, working on the project of its folder
    assert outcome["project_dir"] == str(project)
    assert outcome["pipeline_module"] == str(installed / "pipeline" / "__init__.py")
    assert outcome["state_dir"] == str(project / ".warehouse")
    assert outcome["land_1"] == 0 and outcome["land_2"] == 0 and outcome["land_3"] == 0
    for build in ("build_1", "build_2"):
        assert outcome[build].pop("fct_ticket") == "success", outcome[build]
        assert outcome[build].pop("ticket_assignments") == "success", outcome[build]
        # the team's plain Parquet table, built again by the second build (dropped and created)
        assert outcome[build].pop("dim_date") == "success", outcome[build]
        assert set(outcome[build].values()) == {"success", "pass"}, outcome[build]
    # the framework's hooks and tests ran on the team's model, the quarantine check on its source
    # the team's dbt unit test of its model of the kind ran and passed in both builds
    # and its unit test of its staging model, which reads versions through the framework's macros
    assert all(outcome[b].get(test) == "pass" for b in ("build_1", "build_2")
               for test in ("fct_ticket_keeps_one_row_per_ticket_and_flags_the_deleted_ones",
                            "stg_helpdesk__tickets_keeps_the_latest_version_of_each_ticket")), outcome
    for name in ("backfill_safe-on-run-start-0", "backfill_safe-on-run-end-0",
                 "backfill_safe_reconcile_daily_totals_fct_ticket_", "backfill_safe_no_unloaded_changes_fct_ticket_",
                 "backfill_safe_source_landed_rows_are_loaded_or_quarantined_helpdesk_tickets_",
                 "backfill_safe_reconcile_daily_totals_ticket_assignments_",
                 "backfill_safe_no_unloaded_changes_ticket_assignments_"):
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

    # the team's mart (its SQL as written: the fact, the staging view, the agents read straight)
    # equals its select over every input after each day: day 1, an agent not landed yet
    assert outcome["mart_1"] == [[1, "2025-03-01", 10, "Ana", "billing", "10.00"],
                                 [2, "2025-03-02", 10, "Ana", "billing", "20.00"],
                                 [3, "2025-03-03", 11, "Ben", "tech", "30.00"],
                                 [4, "2025-03-04", 11, "Ben", "tech", "40.00"],
                                 [5, "2025-03-05", 12, None, None, "50.00"]]
    # day 2: the fact's late correction and delete, the new and the fixed ticket, a rename the
    # agents' source alone carries (tickets 4 and 7), the agent of 5 and 6 arrived, stale
    # versions of a ticket and of an agent ignored
    mart_2 = [[1, "2025-03-01", 10, "Ana", "billing", "10.00"], [2, "2025-03-02", 10, "Ana", "billing", "25.00"],
              [4, "2025-03-04", 11, "Benedict", "tech", "40.00"], [5, "2025-03-05", 12, "Cleo", "tech", "50.00"],
              [6, "2025-03-05", 12, "Cleo", "tech", "60.00"], [7, "2025-03-06", 11, "Benedict", "tech", "70.00"]]
    assert outcome["mart_2"] == mart_2
    assert outcome["mart_1_is_its_select"] and outcome["mart_2_is_its_select"]
    assert outcome["mart_watermark"] == "2025-03-06 13:00:00"  # its landed sources' greatest version
    # day 3: the rename dated before the window is missed by the daily run, and its audit names
    # the two tickets of that agent with their dates; the rest of the build passed
    assert outcome["mart_3"] == mart_2 and not outcome["mart_3_is_its_select"]
    failed = {name: status for name, status in outcome["build_3"].items() if status not in ("success", "pass")}
    assert list(failed) == [n for n in outcome["build_3"] if n.startswith(
        "backfill_safe_no_unloaded_changes_ticket_assignments_")] and list(failed.values()) == ["fail"], failed
    assert [a[:2] + a[3:] for a in outcome["audit_3"]] == [["ticket_assignments", "1", "2025-03-01"],
                                                           ["ticket_assignments", "2", "2025-03-02"]]
    # `pipeline restate` restates those dates of the mart on a branch, published
    assert outcome["restate"] == 0
    restated = [[1, "2025-03-01", 10, "Anabel", "billing", "10.00"], [2, "2025-03-02", 10, "Anabel", "billing", "25.00"],
                *mart_2[2:]]
    assert outcome["mart_restated"] == restated and outcome["mart_restated_is_its_select"]
    # the materialization's work after the MERGE: the watermark stayed below the
    # quarantined version on day 1; day 2's MERGE rewrote the four dates it touched only
    assert outcome["run_records"] == [["success", "2025-03-05 09:00:00", 1, 5, 0, 5],
                                      ["success", "2025-03-06 13:00:00", 1, 3, 2, 4]]
    # the control tables in the team's warehouse; none of the repository's examples built there
    assert {"control.etl_watermark", "control.run_records", "control.landed_files"} <= set(outcome["tables"])
    # each model's current state is the view the framework keeps of its select
    assert [t for t in outcome["tables"] if t.startswith("analytics_marts.")] == [
        "analytics_marts.dim_date", "analytics_marts.fct_ticket", "analytics_marts.fct_ticket__current_state",
        "analytics_marts.ticket_assignments",
        "analytics_marts.ticket_assignments__current_state"]
    assert [t for t in outcome["tables"] if t.startswith("helpdesk_raw.")] == ["helpdesk_raw.agents",
                                                                              "helpdesk_raw.tickets"]
    manifest = json.loads((project / "target" / "manifest.json").read_text())
    built = sorted(n["name"] for n in manifest["nodes"].values() if n["resource_type"] in ("model", "seed"))
    assert built == ["audit_quarantined_rows", "dim_date", "fct_ticket", "stg_helpdesk__tickets",
                     "ticket_assignments"], built
    # no test of the package's examples attached to the team's models of the same name (dim_date)
    tests = [n for n in manifest["nodes"].values() if n["resource_type"] == "test"]
    assert [t["unique_id"] for t in tests if t["package_name"] != "helpdesk_analytics"] == [
        "test.backfill_safe.no_watermark_drift"], tests
    assert not [c for t in tests for c in [t.get("column_name")] if c == "date_key"], tests
    assert not [s for s in manifest["sources"] if not s.startswith("source.helpdesk_analytics.")]
    # nor any example macro, seed or var: the installed package carries the framework only
    assert not [m for m in manifest["macros"].values()
                if m["package_name"] == "backfill_safe" and "examples" in m["original_file_path"]]
    assert not (installed / "backfill_safe" / "seeds").exists()

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
    assert outcome["compare_mart"] == 0
    assert {k: outcome["compared_mart"][k] for k in ("identical", "modified", "missing", "extra", "equal")} == {
        "identical": 6, "modified": 0, "missing": 0, "extra": 0, "equal": True}, outcome["compared_mart"]
    assert outcome["report"] == 0 and outcome["report_names_the_models"]
    # the backfill of the fact restated its damaged date and, downstream of it, the mart's
    assert outcome["rows_damaged"] != expected and outcome["mart_damaged"] != restated
    assert outcome["backfill"] == 0
    assert outcome["rows_3"] == expected
    assert outcome["mart_backfilled"] == restated and outcome["mart_backfilled_is_its_select"]
    assert outcome["backfill_runs"] == [["published", "an agent's rename landed late"],
                                        ["published", "restate after a bad deploy"]]
