"""A team's day with the framework installed by pip, in a process of its own, run by the
team's environment's Python from the team's project folder (tests/python/test_package_install.py):
its own dbt project, profile and state folder (.warehouse), found from that folder as the
`pipeline` command finds them. Every step is the `pipeline` command or dbt as a user runs them,
in one process (one JVM):

    .venv/bin/python consumer_driver.py FILES_DIR

FILES_DIR holds each day's files (`day1/`, `day2/`, `day3/`: the tickets' and the agents'
versions). Land day 1, `dbt build`; land day 2 (late corrections, a delete, a duplicate, an
agent's rename, an agent arriving, a stale version), `dbt build`; land day 3 (an agent's rename
dated before the mart's window), `dbt build` (its audit names the tickets it missed),
`pipeline restate`; damage one date of the fact and one of the mart, then `pipeline backfill`
over every date. The outcome is one line `RESULT <json>` on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FACT = "analytics_marts.fct_ticket"
MART = "analytics_marts.ticket_assignments"
MART_COLUMNS = "ticket_id, opened_date, agent_id, agent_name, team, amount"


def main(files: str) -> int:
    import pipeline
    from pipeline import cli, iceberg, paths
    from pipeline.dbt import Dbt
    from pipeline.engine import get_engine

    spark = get_engine()
    dbt = Dbt(quiet=True)

    def rows() -> list[list]:
        return [[r[0], str(r[1]), r[2], str(r[3])]
                for r in spark.sql(f"select ticket_id, opened_date, queue, amount from {FACT} order by 1").collect()]

    def build(check: bool = True) -> dict[str, str]:
        return {r.name: r.status for r in dbt.invoke("build", check=check)}

    def land(day: str) -> int:
        return cli.main(["land", *sorted(str(f) for f in (Path(files) / day).iterdir())])

    def mart(relation: str = MART) -> list[list]:
        """The mart's rows; of its current state (the framework's view of the team's select,
        over every input), the live ones."""
        live = " where not is_deleted" if relation != MART else ""
        return [[str(v) if v is not None and not isinstance(v, (int, bool)) else v for v in r]
                for r in spark.sql(f"select {MART_COLUMNS} from {relation}{live} order by 1").collect()]

    def mart_outcome(label: str) -> None:
        outcome[label] = mart()
        outcome[label + "_is_its_select"] = outcome[label] == mart(MART + "__current_state")

    outcome: dict[str, object] = {"project_dir": str(paths.PROJECT_DIR), "pipeline_module": pipeline.__file__,
                                  "state_dir": str(paths.state_dir())}
    outcome["land_1"] = land("day1")
    outcome["build_1"] = build()
    outcome["rows_1"] = rows()
    mart_outcome("mart_1")
    outcome["land_2"] = land("day2")
    # what the next daily run of the team's model will read, before it runs (and writes nothing)
    explained = paths.state_dir() / "explain.json"
    before = iceberg.current_snapshot_id(spark, FACT)
    outcome["explain"] = cli.main(["explain", "fct_ticket", "--json", str(explained)])
    outcome["explained"] = json.loads(explained.read_text()) if explained.exists() else None
    outcome["explain_left_the_table"] = iceberg.current_snapshot_id(spark, FACT) == before
    outcome["build_2"] = build()
    outcome["rows_2"] = rows()
    mart_outcome("mart_2")
    outcome["mart_watermark"] = str(iceberg.watermarks(spark).get("ticket_assignments"))
    outcome["days_2"] = [[str(r[0]), r[1], r[2]] for r in spark.sql(
        "select date_day, is_weekend, tickets_opened from analytics_marts.dim_date order by 1").collect()]
    outcome["watermark"] = str(iceberg.watermarks(spark).get("fct_ticket"))
    outcome["run_records"] = [[r[0], str(r[1]), r[2], r[3], r[4], r[5]] for r in spark.sql(
        "select status, watermark_after, snapshots_committed, added_records, deleted_records,"
        " changed_partitions from control.run_records where model_name = 'fct_ticket'"
        " order by started_at").collect()]
    outcome["tables"] = sorted(f"{r[0]}.{r[1]}" for db in ("control", "analytics_marts", "helpdesk_raw")
                               for r in spark.sql(f"show tables in {db}").collect())
    outcome["restate_dry_run"] = cli.main(["restate", "--dry-run"])
    # day 3: an agent renamed with a version dated before the mart's window (its lookback below
    # its watermark): the daily run does not see it, the audit names the tickets, restate repairs
    outcome["land_3"] = land("day3")
    outcome["build_3"] = build(check=False)
    mart_outcome("mart_3")
    outcome["audit_3"] = [[r[0], r[1], r[2], str(r[3])] for r in spark.sql(
        "select model_name, unique_key, problem, restate_date from audit.audit_unreflected_changes"
        " order by 1, 2").collect()]
    outcome["restate"] = cli.main(["restate", "--reason", "an agent's rename landed late"])
    mart_outcome("mart_restated")
    # the dual run: the incremental table against a full refresh of the model in a scratch schema.
    # Without the project's routing of the dual run's schema it refuses, before any build.
    routing = paths.PROJECT_DIR / "macros" / "generate_schema_name.sql"
    routing.rename(routing.with_suffix(".off"))
    before = iceberg.current_snapshot_id(spark, FACT)
    outcome["compare_unrouted"] = cli.main(["compare", "fct_ticket"])
    outcome["unrouted_left_the_table"] = iceberg.current_snapshot_id(spark, FACT) == before
    routing.with_suffix(".off").rename(routing)
    compared = paths.state_dir() / "compare.json"
    outcome["compare"] = cli.main(["compare", "fct_ticket", "--json", str(compared)])
    outcome["compared"] = json.loads(compared.read_text()) if compared.exists() else None
    outcome["compare_mart"] = cli.main(["compare", "ticket_assignments", "--json", str(compared)])
    outcome["compared_mart"] = json.loads(compared.read_text()) if compared.exists() else None
    page = paths.state_dir() / "status.html"
    outcome["report"] = cli.main(["report", "--out", str(page)])
    outcome["report_names_the_models"] = page.exists() and all(
        name in page.read_text() for name in ("fct_ticket", "ticket_assignments"))
    # a bad deploy: every amount of one date off by one, in the fact and in the mart; a backfill
    # of the fact over all dates restates it and the mart downstream of it
    spark.sql(f"update {FACT} set amount = amount + 1 where opened_date = date'2025-03-02'")
    spark.sql(f"update {MART} set team = 'nobody' where opened_date = date'2025-03-05'")
    outcome["rows_damaged"] = rows()
    outcome["mart_damaged"] = mart()
    outcome["backfill"] = cli.main(["backfill", "--start", "2025-03-01", "--end", "2025-03-08",
                                    "--batch-days", "7", "--select", "fct_ticket",
                                    "--reason", "restate after a bad deploy"])
    outcome["rows_3"] = rows()
    mart_outcome("mart_backfilled")
    outcome["backfill_runs"] = [[r[0], r[1]] for r in spark.sql(
        "select status, reason from control.backfill_runs order by created_at").collect()]
    print("RESULT " + json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
