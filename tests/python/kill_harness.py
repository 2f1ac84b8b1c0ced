"""A backfill in processes of its own, for the tests that kill it with SIGKILL.

Embedded Derby admits one JVM per metastore, so these processes use their own state folder
(PIPELINE_STATE_DIR, set by the test), never the test session's.

    python kill_harness.py backfill            build a small warehouse whose first three days hold
                                               corrections the daily run never saw, then start
                                               `pipeline backfill` over them (1-day windows)
    python kill_harness.py resume-and-verify RUN_ID
                                               print the run's state as the kills left it, resume it
                                               through the CLI, then print the outcome

Each report is one line `RESULT <json>` on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

START, END = "2025-01-01", "2025-01-04"
MODELS = "fct_order_item fct_orders"
CURRENT_STATE = {"marts.fct_order_item": ("staging.int_order_items__current_state", "order_item_sk"),
                 "marts.fct_orders": ("staging.int_orders__current_state", "order_id")}


def backfill() -> int:
    from domains import SHOP_ONLY
    from pipeline import cli, paths, warehouse
    from pipeline.dbt import Dbt
    from sample.generate import GeneratorConfig, generate
    from pipeline.land import land
    from pipeline.spark import get_spark

    spark = get_spark()
    dbt = Dbt(quiet=True)
    warehouse.reset(spark)
    dbt.invoke("seed")
    for folder in generate(GeneratorConfig(days=4, orders_per_day=20, seed=11), paths.state_dir() / "landing"):
        land(spark, sorted(folder.iterdir()))
    dbt.invoke("run", *SHOP_ONLY)  # the backfill restates the shop's facts; the rides example is not read
    # one corrected line per order date in the backfill range, landed after the daily run: every
    # window has rows to restate
    spark.sql(f"""
        insert into raw.order_items
        select order_id, order_item_id, product_id, quantity + 10, unit_price, discount_amount,
               updated_at + interval 1 second, false, current_timestamp(), 'kill-harness-corrections'
        from (
            select items.*, row_number() over (partition by orders.order_date order by items.order_id,
                   items.order_item_id) as rn
            from staging.stg_shop__order_items as items
            inner join staging.stg_shop__orders as orders on items.order_id = orders.order_id
            where not items.is_deleted and not orders.is_deleted
              and orders.order_date >= date'{START}' and orders.order_date < date'{END}'
        ) where rn = 1
    """)
    return cli.main(["backfill", "--start", START, "--end", END, "--batch-days", "1", "--select", MODELS,
                     "--reason", "kill harness"])


def _state(spark, run_id: str) -> dict:
    from pipeline.backfill.control import Control

    control = Control(spark)
    [run] = control.runs(run_id)
    return {"status": run.status, "windows": [w.status for w in control.windows(run_id)],
            "active_runs": [r.run_id for r in control.active_runs()]}


def resume_and_verify(run_id: str) -> int:
    from pipeline import cli
    from pipeline.spark import get_spark

    spark = get_spark()
    before = _state(spark, run_id)
    code = cli.main(["backfill", "--resume", run_id])
    after = _state(spark, run_id)
    after["exit_code"] = code
    for table, (view, key) in CURRENT_STATE.items():
        columns = ", ".join(spark.table(table).columns)
        published = sorted(tuple(r) for r in spark.sql(f"select {columns} from {table}").collect())
        full_refresh = sorted(tuple(r) for r in spark.sql(f"select {columns} from {view} where not is_deleted").collect())
        duplicates = spark.sql(f"select count(*) - count(distinct {key}) from {table}").collect()[0][0]
        after[table] = {"rows": len(published), "equals_full_refresh": published == full_refresh,
                        "duplicate_keys": duplicates}
    print("RESULT " + json.dumps({"before": before, "after": after}), flush=True)
    return 0


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "backfill":
        sys.exit(backfill())
    if command == "resume-and-verify":
        sys.exit(resume_and_verify(sys.argv[2]))
    sys.exit(f"unknown command {command!r}")
