"""Volume alerts: quiet on the generator's normal days, firing on an injected spike or drop.

`volume_within_band` (rows per order date against the trailing dates) on the facts' data, and
`run_delta_within_band` (a daily run's added records against the trailing runs) on
control.run_records, with a hand-made history of runs.
"""

from __future__ import annotations

from pathlib import Path

from helpers import Warehouse
from pipeline.generate import GeneratorConfig, generate
from pipeline.land import land

ERROR = ("--vars", '{"volume_alert_severity": "error"}')


def _volume_tests(wh: Warehouse, name: str) -> dict[str, tuple[str, int]]:
    """Status and failing rows of each test named `name`, with severity error."""
    results = wh.dbt.invoke("test", "--select", f"test_name:{name}", *ERROR, check=False)
    return {r.name: (r.status, r.failures) for r in results if r.resource_type == "test"}


def test_volume_within_band_is_quiet_on_normal_days_and_fires_on_a_spike_and_a_drop(warehouse: Warehouse,
                                                                                   tmp_path: Path):
    days = generate(GeneratorConfig(days=9, orders_per_day=30, seed=21), tmp_path / "landing")
    for folder in days:
        land(warehouse.spark, sorted(folder.iterdir()))
    warehouse.dbt_run()
    quiet = _volume_tests(warehouse, "volume_within_band")
    assert sorted(quiet.values()) == [("pass", 0), ("pass", 0)], quiet

    # a spike: a tenth day with five times the usual orders (copies of day 9's, new ids)
    for copy in range(1, 6):
        warehouse.spark.sql(
            f"insert into raw.orders select order_id + {copy} * 1000000, customer_id, channel, status,"
            " ordered_at + interval 1 day, updated_at + interval 1 day, is_deleted, current_timestamp(), 'spike'"
            " from raw.orders where cast(ordered_at as date) = date'2025-01-09'")
        warehouse.spark.sql(
            f"insert into raw.order_items select i.order_id + {copy} * 1000000, i.order_item_id, i.product_id,"
            " i.quantity, i.unit_price, i.discount_amount, i.updated_at + interval 1 day, i.is_deleted,"
            " current_timestamp(), 'spike' from raw.order_items as i left semi join raw.orders as o"
            " on i.order_id = o.order_id and cast(o.ordered_at as date) = date'2025-01-09'")
    warehouse.dbt_run()
    spike = _volume_tests(warehouse, "volume_within_band")
    assert sorted(status for status, _ in spike.values()) == ["fail", "fail"], spike

    # the default severity is warn: the same finding does not fail a build
    warned = [r for r in warehouse.dbt.invoke("test", "--select", "test_name:volume_within_band", check=False)
              if r.resource_type == "test"]
    assert {r.status for r in warned} == {"warn"}

    # a drop: the spike day deleted down to a handful of orders
    warehouse.spark.sql("insert into raw.orders select order_id, customer_id, channel, status, ordered_at,"
                        " updated_at + interval 1 minute, true, current_timestamp(), 'drop' from raw.orders"
                        " where cast(ordered_at as date) = date'2025-01-10' and order_id % 50 <> 0")
    warehouse.dbt_run()
    drop = _volume_tests(warehouse, "volume_within_band")
    assert sorted(status for status, _ in drop.values()) == ["fail", "fail"], drop


def test_run_delta_within_band_compares_the_latest_run_with_the_trailing_runs(warehouse: Warehouse,
                                                                            tmp_path: Path):
    # the test reads control.run_records only: its table, no data in the facts, is all it needs
    warehouse.dbt.invoke("run-operation", "ensure_control_tables")

    def history(latest: int) -> None:
        """Six daily runs of fct_order_item adding about 100 records, then one adding `latest`."""
        warehouse.spark.sql("delete from control.run_records")
        added = [100, 90, 110, 105, 95, 100, latest]
        values = ", ".join(
            f"('inv{n}', 'fct_order_item', 'marts.fct_order_item', 'success', timestamp'2025-02-01 00:00:00'"
            f" + make_dt_interval({n}, 0, 0, 0), null, null, null, null, null, null, 1, {a}, 0, 1, 0, 1, '',"
            " current_timestamp())" for n, a in enumerate(added))
        warehouse.spark.sql(f"insert into control.run_records values {values}")

    def status() -> str:
        [result] = [r for r in warehouse.dbt.invoke("test", "--select", "test_name:run_delta_within_band,fct_order_item",
                                                    *ERROR, check=False) if r.resource_type == "test"]
        return result.status

    history(120)
    assert status() == "pass"
    history(1000)
    assert status() == "fail"
    history(5)
    assert status() == "fail"
