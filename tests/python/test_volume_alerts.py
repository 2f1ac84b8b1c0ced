"""Volume alert on what a daily run wrote: `run_delta_within_band` (a daily run's added records
against the trailing runs) on control.run_records, with a hand-made history of runs; and what
`pipeline status` says of a `volume_within_band` test that cannot fire at its table's volume
(pipeline.volume), on hand-made tables of the facts' names.

(`volume_within_band`, rows per order date on the facts' data, quiet on the generator's normal
days and firing on an injected spike or drop, is tested in test_generated_days.py on the
warehouse that module builds from generated days.)
"""

from __future__ import annotations

import dataclasses

import pytest

from helpers import Warehouse
from pipeline import cli

ERROR = ("--vars", '{"volume_alert_severity": "error"}')


def test_run_delta_within_band_compares_the_latest_run_with_the_trailing_runs(warehouse: Warehouse):
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


def _rows_per_date(wh: Warehouse, relation: str, counts: list[int]) -> None:
    """A hand-made table `relation`: counts[i] rows on order_date 2025-01-01 + i days, each its own
    key (both facts' unique keys, which `pipeline status` counts). The volume tests read the date
    column alone: no dbt build is needed to hold a volume."""
    wh.spark.sql("create schema if not exists marts")
    values = ", ".join(f"(date_add(date'2025-01-01', {day}), {day * 1000 + line})"
                       for day, rows in enumerate(counts) for line in range(rows))
    wh.spark.sql(f"create table {relation} using iceberg as select order_date, key as order_item_sk, key as order_id"
                 f" from values {values} as t(order_date, key)")


def _status(capsys: pytest.CaptureFixture) -> str:
    capsys.readouterr()
    assert cli.main(["status"]) == 0
    return capsys.readouterr().out


def test_status_says_when_a_volume_test_cannot_fire_at_its_tables_volume(warehouse: Warehouse, capsys):
    # ten dates of 3 rows, then a tenfold day: the test stays quiet, its trailing median (3) under
    # min_trailing_mean (10); and fct_orders with four dates of 20 rows: too little history
    _rows_per_date(warehouse, "marts.fct_order_item", [3] * 10 + [30])
    _rows_per_date(warehouse, "marts.fct_orders", [20] * 4)
    [quiet] = [r for r in warehouse.dbt.invoke("test", "--select", "test_name:volume_within_band,fct_order_item",
                                               *ERROR, check=False) if r.resource_type == "test"]
    assert quiet.status == "pass"
    printed = " ".join(_status(capsys).split())  # the console's line breaks undone
    assert ("volume_within_band on fct_order_item (order_date) cannot fire: its trailing median is 3 rows a date,"
            " below min_trailing_mean 10") in printed, printed[-2000:]
    assert ("volume_within_band on fct_orders (order_date) cannot fire: only 3 dates of history, fewer than"
            " min_history_days 7") in printed, printed[-2000:]
    assert "on fct_trip" not in printed  # not built: nothing to say of its volume

    # each test's own arguments count: at min_trailing_mean 2 the same table can fire
    from pipeline import volume

    tests = {t.model: t for t in volume.volume_tests()}
    assert volume.cannot_fire(warehouse.spark, warehouse.dbt, tests["fct_order_item"]) is not None
    assert volume.cannot_fire(warehouse.spark, warehouse.dbt, dataclasses.replace(tests["fct_order_item"], min_trailing_mean=2)) is None


def test_status_says_nothing_of_a_volume_test_that_can_fire(warehouse: Warehouse, capsys):
    # twenty rows a date for ten dates; and fct_orders just at both thresholds: 7 dates of
    # history at a median of 10 rows (the macro's guards are >=)
    _rows_per_date(warehouse, "marts.fct_order_item", [20] * 10)
    _rows_per_date(warehouse, "marts.fct_orders", [10] * 8)
    printed = " ".join(_status(capsys).split())
    assert "cannot fire" not in printed, printed[-2000:]
