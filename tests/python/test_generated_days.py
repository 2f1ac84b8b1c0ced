"""Several days of generated source data: the daily incremental equals a full refresh.

Exercises the rules together on the generator's mix (late corrections up to 30 days back,
late-arriving orders, header changes, ordered_at moves, out-of-order versions, duplicates,
deletions, product and customer changes), day after day, with the data tests after each run.
"""

from __future__ import annotations

from pathlib import Path

from helpers import Warehouse
from pipeline.generate import GeneratorConfig, generate
from pipeline.land import land

MARTS = ("marts.fct_order_item", "marts.fct_orders", "marts.dim_customer", "marts.dim_product",
         "marts.dim_channel", "marts.dim_date")


def test_daily_incrementals_over_generated_days_equal_a_full_refresh(warehouse: Warehouse, tmp_path: Path):
    days = generate(GeneratorConfig(days=5, orders_per_day=40, seed=11), tmp_path / "landing")
    land(warehouse.spark, sorted(days[0].iterdir()))
    warehouse.dbt_run()
    for folder in days[1:]:
        land(warehouse.spark, sorted(folder.iterdir()))
        warehouse.dbt_run()
    results = warehouse.dbt.invoke("test")
    assert {r.status for r in results if r.resource_type == "test"} == {"pass"}
    incremental = {t: warehouse.table(t) for t in MARTS}
    assert len(incremental["marts.fct_order_item"]) > 400

    warehouse.dbt_run("--full-refresh")
    full_refresh = {t: warehouse.table(t) for t in MARTS}
    for table in MARTS:
        assert incremental[table] == full_refresh[table], table
