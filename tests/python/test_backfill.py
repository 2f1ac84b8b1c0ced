"""The backfill runner on real Iceberg tables: write-audit-publish, resume, rollback, guardrails.

Each test starts from a warehouse built from four generated days (2025-01-01 .. 01-04), then
lands corrections of three lines of 2025-01-01 updated before the incremental window (a silent
miss the daily run cannot see): a backfill of that range is what repairs them.
"""

from __future__ import annotations

import io
from datetime import timedelta
from pathlib import Path

import pytest
from rich.console import Console

from helpers import Warehouse, item
from pipeline import iceberg
from pipeline.backfill.control import Control
from pipeline.backfill.runner import Backfill, BackfillRefused
from pipeline.generate import GeneratorConfig, generate
from pipeline.land import land

MARTS = ("marts.fct_order_item", "marts.fct_orders", "marts.dim_customer", "marts.dim_product",
         "marts.dim_channel", "marts.dim_date")


class SimulatedCrash(BaseException):
    """Stands for the process dying: not an Exception, so the runner records nothing."""


@pytest.fixture(scope="module")
def built_once(spark, dbt, tmp_path_factory) -> tuple[Warehouse, dict[str, int]]:
    tmp_path = tmp_path_factory.mktemp("backfill")
    warehouse = Warehouse.empty(spark, dbt, tmp_path)
    for folder in generate(GeneratorConfig(days=4, orders_per_day=20, seed=5), tmp_path / "landing"):
        land(warehouse.spark, sorted(folder.iterdir()))
    warehouse.dbt_run()
    # corrections stamped 2025-01-01 12:00: newer than those lines' current versions, but before
    # the window (watermark ~2025-01-04 23:59 minus 3 days): invisible to the daily run
    lines = warehouse.rows("select order_id, order_item_id, product_id from staging.stg_shop__order_items"
                           " where updated_at < timestamp'2025-01-01 12:00' and not is_deleted order by 1, 2 limit 3")
    assert len(lines) == 3
    warehouse.land(order_items=[item(r.order_id, r.order_item_id, "2025-01-01 12:00", product_id=r.product_id,
                                     quantity=20) for r in lines])
    warehouse.dbt_run()
    missed = [r for r in warehouse.dbt.invoke("test", "--select", "fct_order_item", check=False)
              if r.name.startswith("no_unloaded_changes")]
    assert [(r.status, r.failures) for r in missed] == [("fail", 3)]
    return warehouse, _iceberg_tables(warehouse)


def _iceberg_tables(wh: Warehouse) -> dict[str, int]:
    tables = {}
    for schema in ("raw", "marts", "control"):
        for table in wh.spark.catalog.listTables(schema):
            if table.tableType != "VIEW" and not table.isTemporary:
                tables[f"{schema}.{table.name}"] = wh.snapshot_id(f"{schema}.{table.name}")
    return tables


@pytest.fixture
def built(built_once) -> Warehouse:
    """The module's warehouse; every Iceberg table is put back to its snapshot after the test."""
    warehouse, tables = built_once
    yield warehouse
    warehouse.spark.conf.unset("spark.wap.branch")
    for name in set(_iceberg_tables(warehouse)) - set(tables):
        warehouse.spark.sql(f"drop table {name} purge")
    for name, snapshot in tables.items():
        for ref in warehouse.rows(f"select name from {name}.refs where type = 'BRANCH' and name <> 'main'"):
            warehouse.spark.sql(f"alter table {name} drop branch `{ref.name}`")
        if warehouse.snapshot_id(name) != snapshot:
            warehouse.spark.sql(f"call spark_catalog.system.set_current_snapshot('{name}', {snapshot})")


def full_refresh_result(wh: Warehouse, table: str) -> list[tuple]:
    """What `dbt run --full-refresh` would write: the live rows of the model's current-state view."""
    view = {"marts.fct_order_item": "staging.int_order_items__current_state",
            "marts.fct_orders": "staging.int_orders__current_state"}[table]
    columns = ", ".join(wh.spark.table(table).columns)
    return sorted(tuple(r) for r in wh.rows(f"select {columns} from {view} where not is_deleted"))


def runner(wh: Warehouse, **kwargs) -> Backfill:
    return Backfill(wh.dbt, wh.spark, Console(file=io.StringIO()), **kwargs)


def snapshots(wh: Warehouse) -> dict:
    return {t: wh.snapshot_id(t) for t in MARTS}


def test_backfill_reproduces_the_full_refresh_publishes_atomically_and_rolls_back_exactly(built: Warehouse):
    before_tables = {t: built.table(t) for t in MARTS}
    watermark = built.watermark("fct_order_item")
    backfill = runner(built)
    run_id = backfill.start(backfill.plan("2025-01-01", "2025-01-03", "int_order_items__current_state", 1),
                         "repair 01-01..01-02")

    control = Control(built.spark)
    [run] = control.runs(run_id)
    assert run.status == "published" and run.models == ["fct_order_item", "fct_orders"]
    assert [w.status for w in control.windows(run_id)] == ["done", "done"]
    assert built.watermark("fct_order_item") == watermark  # a backfill does not move the daily watermark
    assert not built.rows(f"select * from marts.fct_order_item.refs where name = '{run_id}'")  # branch dropped
    statuses = {r.status for r in built.dbt.invoke("test", "--select", "fct_order_item", "fct_orders")
                if r.resource_type == "test"}
    assert statuses == {"pass"}
    assert built.table("marts.fct_order_item") != before_tables["marts.fct_order_item"]
    for table in ("marts.fct_order_item", "marts.fct_orders"):
        assert built.table(table) == full_refresh_result(built, table), table

    backfill.rollback(run_id)
    assert {t: built.table(t) for t in MARTS} == before_tables
    assert control.runs(run_id)[0].status == "rolled_back"


def test_failing_gate_publishes_nothing_and_leaves_a_report(built: Warehouse):
    # a line whose product never arrived: product_key is null, the not_null test fails on the branch
    built.spark.sql("insert into raw.order_items select order_id, 99, 424242, 1, 1.00, 0.00, updated_at, false,"
                    " current_timestamp(), 'hand-made' from raw.orders where order_id = (select min(order_id)"
                    " from raw.orders) limit 1")
    main_before = snapshots(built)
    backfill = runner(built)
    run_id = backfill.start(backfill.plan("2025-01-01", "2025-01-03", "fct_order_item", 2), "gate test")
    [run] = Control(built.spark).runs(run_id)
    assert run.status == "gate_failed"
    assert "not_null_fct_order_item_product_key" in run.message
    assert snapshots(built) == main_before


def test_overlapping_backfill_is_refused_and_a_stale_lock_is_reported(built: Warehouse):
    first = runner(built)
    first.after_window = lambda window: (_ for _ in ()).throw(SimulatedCrash)
    with pytest.raises(SimulatedCrash):
        first.start(first.plan("2025-01-01", "2025-01-03", "fct_order_item", 1), "holds the lock")
    second = runner(built)
    with pytest.raises(BackfillRefused, match="is backfilling fct_order_item"):
        second.start(second.plan("2025-01-02", "2025-01-04", "fct_order_item", 1), "overlaps")
    stale = runner(built, stale_after=timedelta(0))
    with pytest.raises(BackfillRefused, match="last heartbeat .* --resume bf_.* --abandon"):
        stale.start(stale.plan("2025-01-02", "2025-01-04", "fct_order_item", 1), "overlaps")
    # a model outside the held set is free
    free = runner(built)
    assert free.start(free.plan("2025-01-01", "2025-01-02", "dim_customer", 1), "no overlap")
    [held] = Control(built.spark).active_runs()
    # maintenance leaves a held table alone: a commit to its main would block the publish
    from pipeline.maintain import maintain

    [skipped] = maintain(built.spark, ["marts.fct_order_item"], expire_older_than=None)
    assert skipped.skipped == f"held by running backfill {held.run_id}"
    free.abandon(held.run_id)
    assert Control(built.spark).active_runs() == []


def test_publish_is_refused_when_a_daily_run_moved_main_meanwhile(built: Warehouse):
    backfill = runner(built, stale_after=timedelta(0))
    backfill.after_window = lambda window: (_ for _ in ()).throw(SimulatedCrash)
    with pytest.raises(SimulatedCrash):
        backfill.start(backfill.plan("2025-01-01", "2025-01-03", "fct_order_item", 1), "interleave")
    [run] = Control(built.spark).active_runs()
    built.land(order_items=[item(10**6, 1, "2025-01-04 23:00")])
    built.spark.sql("insert into raw.orders select 1000000, 1, 'web', 'placed', timestamp'2025-01-04 23:00',"
                    " timestamp'2025-01-04 23:00', false, current_timestamp(), 'daily' ")
    built.dbt_run()  # the daily run commits to main while the backfill is paused
    daily = snapshots(built)
    backfill.after_window = lambda window: None
    with pytest.raises(BackfillRefused, match="moved after the backfill started"):
        backfill.resume(run.run_id)
    assert snapshots(built) == daily
    assert Control(built.spark).runs(run.run_id)[0].status == "publish_refused"


def test_dry_run_writes_nothing(built: Warehouse):
    before = snapshots(built)
    assert not iceberg.table_exists(built.spark, "control.backfill_runs")
    backfill = runner(built)
    plan = backfill.plan("2025-01-01", "2025-01-05", None, 2)
    out = io.StringIO()
    Console(file=out, width=200).print(backfill.dry_run(plan))
    text = out.getvalue()
    assert "2 windows" in text and "fct_order_item" in text and "dim_date" in text
    assert snapshots(built) == before
    assert not iceberg.table_exists(built.spark, "control.backfill_runs")


def test_maintenance_compacts_keeps_rollback_snapshots_and_rollback_passes_compactions(built: Warehouse):
    from datetime import UTC, datetime

    from pipeline.maintain import maintain

    before_tables = {t: built.table(t) for t in MARTS}
    backfill = runner(built)
    run_id = backfill.start(backfill.plan("2025-01-01", "2025-01-02", "int_order_items__current_state", 1),
                            "maintenance after a backfill")
    [table] = [t for t in Control(built.spark).tables(run_id) if t.table_name == "marts.fct_order_item"]

    # compaction of the landing tables: fewer files, the same rows
    raw_before = {t: built.table(t) for t in ("raw.orders", "raw.order_items")}
    compacted = {r.table: r for r in maintain(built.spark, ["raw.orders", "raw.order_items"], expire_older_than=None)}
    for name, rows in raw_before.items():
        assert compacted[name].rewritten_files > 0 and compacted[name].files_after < compacted[name].files_before
        assert built.table(name) == rows

    # a compaction of a published table (a `replace` commit) does not end its rollback...
    built.spark.sql("call spark_catalog.system.rewrite_data_files(table => 'marts.fct_order_item',"
                    " options => map('rewrite-all', 'true'))")
    assert iceberg.operations_since(built.spark, "marts.fct_order_item", table.published_snapshot_id) == ["replace"]
    # ...and expiring everything older than an hour from now keeps the snapshot rollback restores
    expired = {r.table: r for r in maintain(built.spark, ["marts.fct_order_item"], compact=False,
                                            expire_older_than=timedelta(0), retain_last=1,
                                            now=datetime.now(UTC) + timedelta(hours=1))}
    assert expired["marts.fct_order_item"].kept_for_rollback == run_id
    assert expired["marts.fct_order_item"].expired_snapshots > 0  # the first build's snapshots went
    assert built.rows(f"select 1 from marts.fct_order_item.snapshots where snapshot_id = {table.pre_publish_snapshot_id}")

    backfill.rollback(run_id)
    assert {t: built.table(t) for t in MARTS} == before_tables
