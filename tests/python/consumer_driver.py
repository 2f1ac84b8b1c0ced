"""A team's day with the framework installed by pip, in a process of its own, run by the
team's environment's Python from the team's project folder (tests/python/test_package_install.py):
its own dbt project, profile and state folder (.warehouse), found from that folder as the
`pipeline` command finds them. Every step is the `pipeline` command or dbt as a user runs them,
in one process (one JVM):

    .venv/bin/python consumer_driver.py DAY1_CSV DAY2_CSV

land day 1, `dbt build`; land day 2 (late corrections, a delete, a duplicate), `dbt build`;
damage one date of the fact, then `pipeline backfill` over every date. The outcome is one line
`RESULT <json>` on stdout.
"""

from __future__ import annotations

import json
import sys

FACT = "analytics_marts.fct_ticket"


def main(day1: str, day2: str) -> int:
    import pipeline
    from pipeline import cli, iceberg, paths
    from pipeline.dbt import Dbt
    from pipeline.engine import get_engine

    spark = get_engine()
    dbt = Dbt(quiet=True)

    def rows() -> list[list]:
        return [[r[0], str(r[1]), r[2], str(r[3])]
                for r in spark.sql(f"select ticket_id, opened_date, queue, amount from {FACT} order by 1").collect()]

    def build() -> dict[str, str]:
        return {r.name: r.status for r in dbt.invoke("build")}

    outcome: dict[str, object] = {"project_dir": str(paths.PROJECT_DIR), "pipeline_module": pipeline.__file__,
                                  "state_dir": str(paths.state_dir())}
    outcome["land_1"] = cli.main(["land", day1])
    outcome["build_1"] = build()
    outcome["rows_1"] = rows()
    outcome["land_2"] = cli.main(["land", day2])
    # what the next daily run of the team's model will read, before it runs (and writes nothing)
    explained = paths.state_dir() / "explain.json"
    before = iceberg.current_snapshot_id(spark, FACT)
    outcome["explain"] = cli.main(["explain", "fct_ticket", "--json", str(explained)])
    outcome["explained"] = json.loads(explained.read_text()) if explained.exists() else None
    outcome["explain_left_the_table"] = iceberg.current_snapshot_id(spark, FACT) == before
    outcome["build_2"] = build()
    outcome["rows_2"] = rows()
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
    page = paths.state_dir() / "status.html"
    outcome["report"] = cli.main(["report", "--out", str(page)])
    outcome["report_names_the_model"] = page.exists() and "fct_ticket" in page.read_text()
    # a bad deploy: every amount of one date off by one; a backfill over all dates restates it
    spark.sql(f"update {FACT} set amount = amount + 1 where opened_date = date'2025-03-02'")
    outcome["rows_damaged"] = rows()
    outcome["backfill"] = cli.main(["backfill", "--start", "2025-03-01", "--end", "2025-03-08",
                                    "--batch-days", "7", "--select", "fct_ticket",
                                    "--reason", "restate after a bad deploy"])
    outcome["rows_3"] = rows()
    outcome["backfill_runs"] = [[r[0], r[1]] for r in spark.sql(
        "select status, reason from control.backfill_runs").collect()]
    print("RESULT " + json.dumps(outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
