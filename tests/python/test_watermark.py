"""The watermark: advanced only after a committed MERGE, the limits of the lookback, and what a
daily run can skip because nothing it reads has changed."""

from __future__ import annotations

import os
import re
import time
from decimal import Decimal
from pathlib import Path

import pytest

from domains import SHOP_FACTS, SHOP_ONLY
from pipeline import iceberg
from pipeline.dbt import DbtError
from pipeline.maintain import maintain
from pipeline.warehouse import relations
from harness.statement_budget import StatementBudget
from helpers import (Warehouse, customer, driver, item, last_invocation_statements, order, product,
                     scope_relations, trip, ts)


def naive(text: str):
    return ts(text).replace(tzinfo=None)


@pytest.fixture(scope="module")
def built_once(spark, dbt, tmp_path_factory) -> tuple[Warehouse, dict[str, str]]:
    """Two orders; after the build the watermark is 2025-01-10 10:00 (window from 01-07 10:00)."""
    warehouse = Warehouse.empty(spark, dbt, tmp_path_factory.mktemp("watermark"), SHOP_ONLY)
    warehouse.land(
        customers=[customer(1, "2024-12-01 00:00")],
        products=[product(1, "2024-12-01 00:00", unit_cost="5.00")],
        orders=[order(101, "2025-01-02 10:00"), order(102, "2025-01-10 10:00")],
        order_items=[item(101, 1, "2025-01-02 10:00", quantity=2), item(102, 1, "2025-01-10 10:00")],
    )
    warehouse.build_all()
    return warehouse, warehouse.checkpoint()


@pytest.fixture
def base(built_once) -> Warehouse:
    """The module's built warehouse, exactly as its build left it (every test's changes are
    undone after it: `Warehouse.restore`)."""
    warehouse, checkpoint = built_once
    assert warehouse.watermark("fct_order_item") == naive("2025-01-10 10:00")
    yield warehouse
    warehouse.restore(checkpoint)


def test_failing_model_leaves_watermark_and_table_unchanged(base: Warehouse):
    before = base.table("marts.fct_order_item")
    base.land(orders=[order(103, "2025-01-11 10:00")], order_items=[item(103, 1, "2025-01-11 10:00")])
    # break the fact: its select no longer matches the table, so its MERGE fails
    base.spark.sql("alter table marts.fct_order_item add column unexpected string")
    # one model that fails and one that succeeds in the same run
    results = base.dbt.invoke("run", *SHOP_FACTS, check=False)
    status = {r.name: r.status for r in results}
    assert status["fct_order_item"] == "error"
    assert status["fct_orders"] == "success"
    assert base.watermark("fct_order_item") == naive("2025-01-10 10:00")
    assert base.watermark("fct_orders") == naive("2025-01-11 10:00")
    assert [row[:-1] for row in base.table("marts.fct_order_item")] == before

    base.spark.sql("alter table marts.fct_order_item drop column unexpected")
    base.dbt_run("--select", "fct_order_item")
    assert (103, 1) in base.fact_lines()


def _data_files(base: Warehouse, table: str) -> tuple[str, set[Path]]:
    """The table's folder, and every file under it."""
    [location] = [r.data_type for r in base.rows(f"describe table extended {table}") if r.col_name == "Location"]
    folder = location.removeprefix("file:")
    return folder, {p for p in Path(folder).rglob("*") if p.is_file()}


def _disk_full(base: Warehouse, folder: str | None, after_files: int = 0) -> None:
    """Simulate a full disk under `folder` (None: no longer), through the embedded target's file
    system (NioLocalFileSystem.Raw.DISK_FULL_UNDER): creating a file there fails once
    `after_files` were created."""
    system = base.spark._jvm.java.lang.System
    if folder is None:
        system.clearProperty("backfill_safe.disk_full_under")
    else:
        system.setProperty("backfill_safe.disk_full_after_files", str(after_files))
        system.setProperty("backfill_safe.disk_full_under", folder)


def test_a_merge_failing_part_way_on_a_full_disk_leaves_table_and_watermark_and_the_next_run_loads_it(base: Warehouse):
    """The disk fills while the fact's MERGE writes its files: two files are written, the third
    fails. The statement fails, Iceberg commits nothing, the watermark stays; the other fact of
    the run commits. The file written is left behind, referenced by nothing: `pipeline
    maintain` removes it (orphan files). Once there is space, the next run loads the versions
    the failed one missed."""
    before = base.table("marts.fct_order_item")
    snapshot = base.snapshot_id("marts.fct_order_item")
    folder, files = _data_files(base, "marts.fct_order_item")
    # a correction of 101 (its date 01-02: a delete file and a data file) and a new order on 01-11
    base.land(orders=[order(101, "2025-01-02 10:00", "2025-01-11 10:00"), order(103, "2025-01-11 10:00")],
              order_items=[item(101, 1, "2025-01-11 10:00", quantity=7), item(103, 1, "2025-01-11 10:00")])
    _disk_full(base, folder, after_files=2)
    try:
        results = {r.name: r for r in base.dbt.invoke("run", *SHOP_FACTS, check=False)}
    finally:
        _disk_full(base, None)
    assert results["fct_order_item"].status == "error"
    assert "No space left on device" in results["fct_order_item"].message
    assert results["fct_orders"].status == "success"
    assert base.snapshot_id("marts.fct_order_item") == snapshot
    assert base.table("marts.fct_order_item") == before
    assert base.watermark("fct_order_item") == naive("2025-01-10 10:00")
    assert base.watermark("fct_orders") == naive("2025-01-11 10:00")
    left = {p for p in _data_files(base, "marts.fct_order_item")[1] - files if not p.name.endswith(".crc")}
    assert left  # what the failed task wrote: a table never referenced it
    referenced = {r.file_path.removeprefix("file:") for r in base.rows("select file_path from marts.fct_order_item.all_files")}
    assert not {str(p) for p in left} & referenced
    # Iceberg removes only orphans older than a day (a running write's files are not referenced yet):
    # the leftovers are made four days old
    four_days_ago = time.time() - 4 * 86400
    for path in _data_files(base, "marts.fct_order_item")[1] - files:
        os.utime(path, (four_days_ago, four_days_ago))
    [maintained] = maintain(base.spark, ["marts.fct_order_item"], compact=False, expire_older_than=None)
    assert maintained.removed_orphan_files == len(left)
    assert _data_files(base, "marts.fct_order_item")[1] == files
    assert base.table("marts.fct_order_item") == before

    base.dbt_run(*SHOP_FACTS)
    lines = base.fact_lines()
    assert lines[(101, 1)].quantity == 7 and (103, 1) in lines
    assert base.watermark("fct_order_item") == naive("2025-01-11 10:00")


def test_a_watermark_commit_failing_on_a_full_disk_loses_and_doubles_nothing(base: Warehouse):
    """The disk fills after the facts' MERGEs, while the invocation commits the watermarks: the
    facts hold the new rows, the watermarks stay where they were (the run fails loudly), and
    the next run reads the same versions again and merges nothing twice."""
    folder, _ = _data_files(base, "control.etl_watermark")
    base.land(orders=[order(103, "2025-01-11 10:00")], order_items=[item(103, 1, "2025-01-11 10:00", quantity=4)])
    _disk_full(base, folder)
    try:
        results = base.dbt.invoke("run", *SHOP_FACTS, check=False)
    finally:
        _disk_full(base, None)
    assert {r.name: r.status for r in results if r.resource_type == "model"} == {
        "fct_order_item": "success", "fct_orders": "success"}
    [hook] = [r for r in results if r.unique_id.endswith("on-run-end-0")]
    assert hook.status == "error" and "No space left on device" in hook.message
    assert base.watermark("fct_order_item") == base.watermark("fct_orders") == naive("2025-01-10 10:00")
    loaded = base.table("marts.fct_order_item")
    assert base.fact_lines()[(103, 1)].quantity == 4

    base.dbt_run(*SHOP_FACTS)
    assert base.table("marts.fct_order_item") == loaded  # read again, nothing doubled or changed
    assert base.watermark("fct_order_item") == base.watermark("fct_orders") == naive("2025-01-11 10:00")
    assert base.watermark("fct_order_item") == naive("2025-01-11 10:00")


def test_a_run_commits_the_watermarks_of_all_its_models_in_one_statement_at_its_end(base: Warehouse):
    # one MERGE into the watermark table per invocation (on-run-end), not one per model: each is
    # an Iceberg commit of control.etl_watermark, so its snapshots count the statements
    def commits() -> int:
        return base.rows("select count(*) as n from control.etl_watermark.snapshots")[0].n

    before = commits()
    base.land(customers=[customer(2, "2025-01-11 09:00")],
              orders=[order(103, "2025-01-11 10:00", customer_id=2)], order_items=[item(103, 1, "2025-01-11 10:00")])
    budget = StatementBudget(base.dbt)
    with budget.recording():
        nodes = base.dbt_run()
    results = {r.name: r for r in nodes}
    statements = last_invocation_statements()
    moved = {"fct_order_item": "2025-01-11 10:00", "fct_orders": "2025-01-11 10:00",
             "dim_channel": "2025-01-11 10:00", "dim_customer": "2025-01-11 09:00"}
    for model, watermark in moved.items():
        assert results[model].status == "success", model
        assert base.watermark(model) == naive(watermark), model
    assert commits() == before + 1
    [merge] = [s for s in statements if "merge into control.etl_watermark" in s]
    assert '"connection_name": "master"' in merge  # a hook's statement, not a model's
    # every advance in that one statement, each source read once in it whichever models read it
    # (four models read raw.orders here), and each run record shows its model's move
    assert all(f"('{model}', " in merge for model in moved)
    read = re.findall(r"'(\w+\.\w+)' as source_key", merge)
    assert "shop.orders" in read and sorted(read) == sorted(set(read)), read
    # the statement budget (harness.statement_budget, the benchmark's per-model figures) sees the
    # same run: the one watermark MERGE is on-run-end's, each fact sent its own table's MERGE
    spent = budget.report(nodes)["models"]
    writes = [st["node"] for st in budget.statements if st["class"] == "watermark" and st["sql"].startswith("merge")]
    assert writes == ["operation.backfill_safe.backfill_safe-on-run-end-0"], writes
    for fact in ("fct_order_item", "fct_orders"):
        assert spent[fact]["classes"]["merge"]["statements"] == 1, spent[fact]
        assert 0 < spent[fact]["spark_s"] <= spent[fact]["node_s"], spent[fact]
    invocation = base.dbt.last_invocation_id()
    records = {r.model_name: r for r in base.rows(
        f"select * from control.run_records where invocation_id = '{invocation}'")}
    for model, watermark in moved.items():
        assert records[model].watermark_after == naive(watermark), model
    assert records["fct_order_item"].watermark_before == naive("2025-01-10 10:00")


def test_a_test_in_the_same_build_reads_the_watermark_its_model_advanced(base: Warehouse):
    # line 101/1 corrected at 01-08 00:00 and loaded (inside the window of the 01-10 10:00 watermark)
    base.land(order_items=[item(101, 1, "2025-01-08 00:00", quantity=7)])
    base.dbt_run("--select", "fct_order_item")
    assert base.fact_lines()[(101, 1)].quantity == 7
    assert base.watermark("fct_order_item") == naive("2025-01-10 10:00")  # a late version moves it not
    # then the table's row goes wrong behind the framework's back, stamped 01-07 12:00: with the
    # stored watermark's window (from 01-07 10:00) the next daily run would still mend it, so it is
    # not a miss yet
    base.spark.sql("update marts.fct_order_item set quantity = 99, updated_at = timestamp'2025-01-07 12:00:00'"
                   " where order_id = 101 and order_item_id = 1")
    passed = base.dbt.invoke("test", "--select", "test_name:no_unloaded_changes,fct_order_item")
    assert [r.status for r in passed if r.resource_type == "test"] == ["pass"]
    # the day's totals differ where no listed late key explains it: an error, not a warning
    # (unexplained_rows), whatever the late keys of other dates
    [unexplained] = [r for r in base.dbt.invoke("test", "--select", "test_name:reconcile_daily_totals,fct_order_item",
                                                check=False) if r.resource_type == "test"]
    assert (unexplained.status, unexplained.failures) == ("fail", 1)
    # a build moves the watermark to 01-12 10:00 (window from 01-09 10:00): the row is now beyond
    # the window, and the build's own test of the model must say so, though the watermark table
    # is written only when the build ends
    base.land(orders=[order(103, "2025-01-12 10:00")], order_items=[item(103, 1, "2025-01-12 10:00")])
    results = base.dbt.invoke("build", "--select", "fct_order_item", check=False)
    [miss] = [r for r in results if r.name.startswith("no_unloaded_changes")]
    assert (miss.status, miss.failures) == ("warn", 1)  # listed: awaits its restatement
    assert base.watermark("fct_order_item") == naive("2025-01-12 10:00")


def drift_check(warehouse: Warehouse) -> tuple[str, list]:
    """The data test no_watermark_drift's status, and the rows the status tools show of it."""
    from pipeline.drift import watermark_drift

    [result] = [r for r in warehouse.dbt.invoke("test", "--select", "no_watermark_drift", check=False)
                if r.resource_type == "test"]
    return result.status, watermark_drift(warehouse.dbt, warehouse.spark)


def test_conflicting_versions_later_than_every_loadable_one_do_not_move_the_watermark(base: Warehouse, capsys):
    # one file: a loadable correction of line 101/1 at 01-11 09:00, and two versions of line
    # 102/1 at 01-16 12:00 that disagree (quarantined: the line keeps its previous version)
    base.land(order_items=[item(101, 1, "2025-01-11 09:00", quantity=3),
                           item(102, 1, "2025-01-16 12:00", quantity=4), item(102, 1, "2025-01-16 12:00", quantity=5)])
    base.dbt_run("--select", "fct_order_item")
    lines = base.fact_lines()
    assert (lines[(101, 1)].quantity, lines[(102, 1)].quantity) == (3, 1)
    conflicting = base.rows("select record_key, updated_at from audit.audit_quarantined_rows"
                            " where reason like 'conflicting versions%'")
    assert sorted(conflicting) == [("102|1", naive("2025-01-16 12:00"))] * 2
    # the watermark is the greatest loadable update time, not the quarantined versions'
    assert base.watermark("fct_order_item") == naive("2025-01-11 09:00")
    assert drift_check(base) == ("pass", [])
    # so a version landed next, stamped inside the window of the loadable maximum (from 01-08
    # 09:00) but before the quarantined versions' window would start (01-13 12:00), is loaded
    base.land(order_items=[item(101, 2, "2025-01-12 00:00", quantity=6)])
    base.dbt_run("--select", "fct_order_item")
    assert base.fact_lines()[(101, 2)].quantity == 6

    # pushed past every loadable version by hand, the watermark fails the drift check, which
    # names the model, both times and the quarantined versions in between
    base.spark.sql("update control.etl_watermark set watermark_ts = timestamp'2025-01-17 00:00:00'"
                   " where pipeline_name = 'fct_order_item'")
    status, drift = drift_check(base)
    assert status == "fail"
    assert {(d.model_name, d.watermark_ts, d.greatest_loadable_updated_at) for d in drift} == {
        ("fct_order_item", naive("2025-01-17 00:00"), naive("2025-01-12 00:00"))}
    assert sorted((d.source_table, d.record_key, d.updated_at) for d in drift) == [
        ("shop.order_items", "102|1", naive("2025-01-16 12:00"))] * 2
    assert all(d.reason.startswith("conflicting versions") for d in drift)
    # `pipeline status` shows the same rows
    from pipeline import cli

    capsys.readouterr()
    assert cli.main(["status"]) == 0
    shown = capsys.readouterr().out
    assert "watermarks ahead of their loadable data: fct_order_item\n" in shown
    assert ("fct_order_item: watermark 2025-01-17 00:00:00 is ahead of its loadable data (the greatest loadable"
            " update time 2025-01-12 00:00:00); quarantined shop.order_items 102|1 at 2025-01-16 12:00:00") in shown


def scope_orders(warehouse: Warehouse, fact: str = "fct_order_item") -> list[int]:
    """The orders the fact's last incremental run recomputed (scope_keys_cached's view)."""
    return sorted(r.order_id for r in warehouse.rows(f"select order_id from {scope_relations(fact)['keys']}"))


def test_versions_already_loaded_inside_the_lookback_are_not_recomputed(base: Warehouse):
    # 102 (updated 2025-01-10 10:00) is inside the 3-day window but was landed before the build
    # started: the build loaded it, so the run recomputes only what landed since (103)
    started = base.rows("select last_run_started_at from control.etl_watermark"
                        " where pipeline_name = 'fct_order_item'")[0].last_run_started_at
    assert started is not None
    base.land(orders=[order(103, "2025-01-11 10:00")], order_items=[item(103, 1, "2025-01-11 10:00")])
    base.dbt_run("--select", "fct_order_item", "fct_orders")
    for fact in ("fct_order_item", "fct_orders"):
        assert scope_orders(base, fact) == [103], fact
    assert set(base.fact_lines()) == {(101, 1), (102, 1), (103, 1)}
    assert base.watermark("fct_order_item") == naive("2025-01-11 10:00")
    assert base.rows("select last_run_started_at from control.etl_watermark"
                     " where pipeline_name = 'fct_order_item'")[0].last_run_started_at > started


def test_versions_landed_within_the_overlap_margin_are_read_again(base: Warehouse):
    # with a margin reaching back past the build's landing, 102's version counts as landed
    # after the build started: read again (a superset), and nothing changes for it
    before = base.fact_lines()[(102, 1)]
    base.land(orders=[order(103, "2025-01-11 10:00")], order_items=[item(103, 1, "2025-01-11 10:00")])
    base.dbt_run("--select", "fct_order_item", "--vars", "{landing_overlap_minutes: 1440}")
    assert scope_orders(base) == [102, 103]
    assert base.fact_lines()[(102, 1)] == before
    # a margin below zero is refused by name (by the model, and by the audit view at the run's
    # end, which reads the same margin), and nothing moves
    watermark = base.watermark("fct_order_item")
    with pytest.raises(DbtError, match="var 'landing_overlap_minutes' must be a whole number of minutes >= 0"):
        base.dbt.invoke("run", "--select", "fct_order_item", "--vars", "{landing_overlap_minutes: -5}")
    assert base.watermark("fct_order_item") == watermark


def test_a_watermark_table_from_before_the_recorded_start_gets_it_and_reads_the_whole_lookback(base: Warehouse):
    base.spark.sql("alter table control.etl_watermark drop column last_run_started_at")
    base.land(orders=[order(103, "2025-01-11 10:00")], order_items=[item(103, 1, "2025-01-11 10:00")])
    base.dbt_run("--select", "fct_order_item", "fct_orders")
    # no recorded start: every version updated inside the window is read (102 and 103)
    assert scope_orders(base) == [102, 103]
    assert set(base.fact_lines()) == {(101, 1), (102, 1), (103, 1)}
    recorded = {r.pipeline_name: r.last_run_started_at for r in base.rows(
        "select pipeline_name, last_run_started_at from control.etl_watermark")}
    assert recorded["fct_order_item"] is not None and recorded["fct_orders"] is not None


def test_version_older_than_the_window_is_reported_as_a_silent_miss(base: Warehouse):
    # updated before the window start (2025-01-07 10:00): the incremental run cannot see them
    base.land(order_items=[item(101, 1, "2025-01-05 00:00", quantity=9), item(101, 2, "2025-01-04 00:00")])
    base.dbt_run("--select", "fct_order_item")
    assert base.fact_lines()[(101, 1)].quantity == 2
    results = {r.name.split("_fct_")[0]: r for r in base.dbt.invoke(
        "test", "--select", "test_name:no_unloaded_changes,fct_order_item",
        "test_name:reconcile_daily_totals,fct_order_item", check=False) if r.resource_type == "test"}
    assert set(results) == {"no_unloaded_changes", "reconcile_daily_totals"}
    assert results["no_unloaded_changes"].status == "warn"  # listed, awaiting its restatement
    assert results["no_unloaded_changes"].failures == 2
    assert results["reconcile_daily_totals"].status == "warn"  # its date is a listed key's
    assert results["reconcile_daily_totals"].failures == 1  # 2025-01-02

    # the restatement path by hand: a plain `dbt run --vars` backfill of the date (no branch, no
    # gate), recorded like any run, with its window; each rewritten row counted once
    base.dbt_run("--select", "fct_order_item", "--vars", "{backfill_start: 2025-01-02, backfill_end: 2025-01-03}")
    [record] = base.rows(f"select * from control.run_records where invocation_id = '{base.dbt.last_invocation_id()}'")
    assert (record.model_name, str(record.window_start), str(record.window_end), record.status) == (
        "fct_order_item", "2025-01-02", "2025-01-03", "success")
    # line 101/1 updated (its old row deleted by position), line 101/2 new
    assert (record.snapshots_committed, record.added_records, record.deleted_records) == (1, 2, 1)
    assert record.watermark_before == record.watermark_after  # a backfill leaves the watermark
    lines = base.fact_lines()
    assert lines[(101, 1)].quantity == 9 and (101, 2) in lines
    assert lines[(101, 1)].net_amount == Decimal("90.00")
    statuses = {r.status for r in base.dbt.invoke("test", "--select", "fct_order_item") if r.resource_type == "test"}
    assert statuses == {"pass"}


def test_run_records_match_the_snapshot_summaries_and_record_failed_runs(base: Warehouse):
    from pipeline import iceberg

    facts = {"fct_order_item": "order_item_sk", "fct_orders": "order_id"}
    before = {name: base.snapshot_id(f"marts.{name}") for name in facts}
    base.land(orders=[order(103, "2025-01-11 10:00")], order_items=[item(103, 1, "2025-01-11 10:00")])
    base.dbt_run()
    invocation = base.dbt.last_invocation_id()
    records = {r.model_name: r for r in base.rows(
        f"select * from control.run_records where invocation_id = '{invocation}'")}
    assert {"fct_order_item", "fct_orders", "dim_customer", "stg_shop__orders"} <= set(records)
    for name, key in facts.items():
        change = iceberg.change_since(base.spark, f"marts.{name}", before[name], key)
        record = records[name]
        assert record.status == "success" and record.relation_name == f"marts.{name}"
        assert (record.snapshots_committed, record.added_records, record.deleted_records, record.changed_partitions) \
            == (change.snapshots, change.added_records, change.deleted_records, change.changed_partitions), name
        assert change.snapshots == 1 and change.added_records > 0
        assert record.watermark_before == naive("2025-01-10 10:00")
        assert record.watermark_after == naive("2025-01-11 10:00")
        assert record.watermark_lag_seconds > 0  # the data is from 2025
        assert record.started_at <= record.finished_at and record.window_start is None
    assert records["stg_shop__orders"].snapshots_committed == 0  # a view commits nothing

    # a failed run is recorded too, with dbt's message, and its watermark did not move (a row
    # landed: a run with nothing landed does nothing, and so fails on nothing)
    base.spark.sql("alter table marts.fct_order_item add column unexpected string")
    base.land(orders=[order(104, "2025-01-12 10:00")], order_items=[item(104, 1, "2025-01-12 10:00")])
    base.dbt.invoke("run", "--select", "fct_order_item", check=False)
    [failed] = base.rows("select * from control.run_records where invocation_id = "
                         f"'{base.dbt.last_invocation_id()}'")
    assert failed.status == "error" and "no longer matches the table" in failed.message
    assert failed.snapshots_committed == 0
    assert failed.watermark_before == failed.watermark_after == naive("2025-01-11 10:00")


def test_a_daily_run_records_the_data_files_each_model_read_of_its_table(base: Warehouse):
    """control.run_scans, per model and table read: the files the model's largest read of its own
    table planned equal, for every model of the kind that ran, Iceberg's own count of the data
    files its table held before the run in the partitions the run wrote to."""
    from pipeline.manifest import incremental_models

    models = {m.name: m for m in incremental_models()}
    before = {name: base.snapshot_id(m.relation) for name, m in models.items()
              if base.spark.catalog.tableExists(m.relation)}
    base.land(customers=[customer(2, "2025-01-11 09:00")],
              orders=[order(103, "2025-01-11 10:00", customer_id=2)],
              order_items=[item(103, 1, "2025-01-11 10:00"), item(102, 1, "2025-01-11 11:00", quantity=5)])
    base.dbt_run()
    invocation = base.dbt.last_invocation_id()
    ran = {r.model_name for r in base.rows(
        f"select model_name from control.run_records where invocation_id = '{invocation}' and status = 'success'")}
    scans = {(r.model_name, r.table_name): r for r in base.rows(
        f"select * from control.run_scans where invocation_id = '{invocation}'")}
    checked = sorted(set(models) & ran & set(before))
    checked_partitioned = []
    assert {"fct_order_item", "fct_orders", "dim_customer"} <= set(checked)
    for name in checked:
        relation = models[name].relation
        new = [r.snapshot_id for r in base.rows(
            f"select snapshot_id from {relation}.snapshots where committed_at > (select committed_at "
            f"from {relation}.snapshots where snapshot_id = {before[name]})")]
        [total] = base.rows(f"select count(*) as n from {relation}.files version as of {before[name]} where content = 0")
        record = scans.get((name, relation))
        if not new:  # committed nothing: whatever it read of its table, no more than the table
            assert record is None or record.largest_scan_files <= total.n, name
            continue
        partitioned = "partition" in base.spark.table(f"{relation}.files").columns
        if partitioned:
            touched = f"select distinct data_file.partition from {relation}.entries where snapshot_id in " \
                      f"({', '.join(map(str, new))})"
            [expected] = base.rows(f"select count(*) as n, count(distinct partition) as partitions from {relation}.files "
                                   f"version as of {before[name]} where content = 0 and partition in ({touched})")
        assert record is not None, f"{name}: no scan of {relation} recorded"
        assert record.role == "target" and record.table_data_files == total.n, name
        # the partitions the run wrote to, or the whole of an unpartitioned table
        assert record.largest_scan_files == (expected.n if partitioned else total.n), name
        assert record.data_files_planned >= record.largest_scan_files
        # the partitions the run planned for its table: those it wrote to that held files
        assert record.partitions_planned == (expected.partitions if partitioned else None), name
        checked_partitioned.append(name) if partitioned else None
    assert {"fct_order_item", "fct_orders"} <= set(checked_partitioned)
    fact = scans[("fct_order_item", "marts.fct_order_item")]
    assert "order_date IN" in fact.filters  # the MERGE's pruning predicate, as Iceberg got it
    assert fact.largest_scan_files < fact.table_data_files  # the 01-02 file was not read
    assert fact.partitions == "order_date=2025-01-10"  # nor its partition
    # tables only: the framework's own bookkeeping (the watermark the models' probes read) and
    # metadata tables are not a model's reads (a backfill runner's thread reads those meanwhile)
    assert all(table.count(".") == 1 and not table.startswith("control.") for _, table in scans), sorted(scans)
    # the fact's reads of the landed order lines are recorded too, as what they are
    lines = scans[("fct_order_item", "raw.order_items")]
    assert lines.role == "source" and lines.rows_read >= 2


def test_explain_plans_the_next_daily_run_writing_nothing_and_the_run_reads_what_it_planned(base: Warehouse):
    """`pipeline explain` for every model of the kind with a table: it commits nothing, moves no
    watermark, records no run and leaves no scratch table; the fact's MERGE plans the files
    Iceberg holds in the partitions of the orders in scope, and the daily run that follows reads
    of each model's table exactly as many files as its largest planned read."""
    from pipeline.explain import ExplainError, explain
    from pipeline.manifest import incremental_models

    models = {m.name: m for m in incremental_models()}
    built = sorted(name for name, m in models.items() if base.spark.catalog.tableExists(m.relation))
    # a correction of an order dated 01-10, and a new order of 01-11
    base.land(orders=[order(103, "2025-01-11 10:00")],
              order_items=[item(102, 1, "2025-01-11 11:00", quantity=5), item(103, 1, "2025-01-11 10:00")])

    def state():
        return ({name: base.snapshot_id(models[name].relation) for name in built},
                base.rows("select * from control.etl_watermark order by pipeline_name"),
                base.rows("select count(*) as n from control.run_records"),
                base.rows("select count(*) as n from control.run_scans"),
                sorted(r.name for r in relations(base.spark, ("scratch",))))

    before = state()
    explained = {e.model: e for e in explain(base.spark, base.dbt, built)}
    assert state() == before
    assert set(explained) == set(built)

    fact = explained["fct_order_item"]
    # its MERGE reads only the partitions of the orders in scope: 01-10 and 01-11 (new), not 01-02
    [target] = [s for s in fact.scans if s.statement == "merge" and s.role == "target"]
    assert target.partitions == ("order_date=2025-01-10",)  # 01-11 has no file yet
    assert "order_date IN" in fact.merge_predicate() and "order_id IN (102, 103)" in fact.merge_predicate()
    assert target.table_data_files == 2 and target.table_partitions == 2
    [files] = base.rows("select count(*) as n from marts.fct_order_item.files "
                        "where content = 0 and partition.order_date = date'2025-01-10'")
    assert target.data_files == files.n == 1
    # to find its scope and stage its select, it read the landed order lines (as the run will)
    assert fact.ran_unknown is None
    [lines] = [r for r in fact.ran if r.table == "raw.order_items"]
    assert lines.role == "source" and lines.rows >= 2
    # as printed, every count shown "X of Y" (files, partitions) is a share: X <= Y
    import io

    from rich.console import Console

    from pipeline.cli.inspection import _print_explanation

    printed = io.StringIO()
    for explanation in explained.values():
        _print_explanation(Console(file=printed, width=250), explanation)
    shares = [(int(x), int(y)) for x, y in re.findall(r"(\d+) of (\d+)", printed.getvalue().replace(",", ""))]
    assert shares and all(x <= y for x, y in shares), shares

    base.dbt_run()
    invocation = base.dbt.last_invocation_id()
    recorded = {(r.model_name, r.table_name): r for r in base.rows(
        f"select * from control.run_scans where invocation_id = '{invocation}'")}
    merged = []
    for name, explanation in explained.items():
        relation = models[name].relation
        planned = [s for s in explanation.scans if s.role == "target"]
        if models[name].over_models:
            # an aggregate's scope is what its upstream's runs record: before they run, nothing
            # is recorded, and the explanation says so rather than promise no MERGE
            assert not explanation.merges, name
            [(_, detail)] = explanation.statements
            assert "its upstream models recorded no change" in detail and "explain them" in detail, name
            continue
        if not explanation.merges:  # explained as no MERGE: the run commits nothing to the table
            assert base.snapshot_id(relation) == before[0][name], name
            continue
        merged.append(name)
        record = recorded.get((name, relation))
        assert record is not None, f"{name}: explained a MERGE, but the run recorded no read of {relation}"
        assert record.largest_scan_files == max(s.data_files for s in planned), name
        if any(s.partitioned for s in planned):  # and the partitions it planned
            assert record.partitions == ", ".join(sorted({p for s in planned for p in s.partitions})), name
        # what the explain read to find the scope and stage the select, the run read again
        for read in explanation.ran:
            assert recorded[(name, read.table)].rows_read >= read.rows, (name, read.table)
            if read.role == "source":
                assert recorded[(name, read.table)].data_files_planned == read.data_files, (name, read.table)
    assert {"fct_order_item", "fct_orders"} <= set(merged)

    with pytest.raises(ExplainError, match="stg_orders is not an incremental model of the framework's kind"):
        explain(base.spark, base.dbt, ["stg_orders"])


def test_a_daily_run_that_reads_more_of_its_table_than_declared_warns(base: Warehouse):
    def warned() -> str:
        # the warnings as dbt fired them (not dbt.log, which dbt rotates at 10 MB)
        _, caught = base.dbt.invoke_logging("record_scans: ", "run", "--select", "fct_order_item",
                                            "--vars", "{max_scan_share: 0.5}")
        return "\n".join(caught)

    # a correction of one order: the fact reads only the file of its date, 01-10 (1 of 2)
    base.land(order_items=[item(102, 1, "2025-01-11 11:00", quantity=5)])
    assert "fct_order_item" not in warned()
    # a correction of every order: the fact's MERGE reads every file of its table
    base.land(order_items=[item(101, 1, "2025-01-12 11:00", quantity=3), item(102, 1, "2025-01-12 11:00", quantity=6)])
    alert = warned()
    [record] = base.rows(f"select * from control.run_scans where invocation_id = '{base.dbt.last_invocation_id()}' "
                         "and model_name = 'fct_order_item' and role = 'target'")
    assert record.largest_scan_files == record.table_data_files == 3  # 01-02, and 01-10 before and after
    assert record.max_scan_share == 0.5
    assert "fct_order_item read 3 of its table's 3 data files in one scan, more than its declared " \
           "max_scan_share 0.5" in alert
    # a share that is no share is refused, naming the var
    with pytest.raises(DbtError, match="var 'max_scan_share': max_scan_share: .* a number > 0 and <= 1"):
        base.dbt.invoke("run", *SHOP_ONLY, "--select", "fct_orders", "--vars", "{max_scan_share: 50}")


def test_a_model_none_of_whose_inputs_landed_anything_stages_and_commits_nothing(base: Warehouse):
    def control(pipeline: str):
        return base.rows("select watermark_ts, last_run_started_at from control.etl_watermark"
                         f" where pipeline_name = '{pipeline}'")[0]

    marts = ("dim_customer", "dim_product", "dim_channel", "fct_order_item")
    snapshots = {m: base.snapshot_id(f"marts.{m}") for m in marts}
    recorded = {m: control(m) for m in marts}
    # only orders and lines land: the customers' and products' dimensions can change nothing
    base.land(orders=[order(103, "2025-01-11 10:00")], order_items=[item(103, 1, "2025-01-11 10:00")])
    results = {r.name: r for r in base.dbt_run("--select", *marts)}
    for quiet in ("dim_customer", "dim_product"):
        assert results[quiet].status == "success", quiet
        assert base.snapshot_id(f"marts.{quiet}") == snapshots[quiet], quiet
        assert control(quiet) == recorded[quiet], quiet  # not even the start: nothing to record
    # dim_channel reads orders (they landed) and a seed: it runs; the fact loads 103
    assert control("dim_channel").last_run_started_at > recorded["dim_channel"].last_run_started_at
    assert (103, 1) in base.fact_lines()
    assert control("fct_order_item").watermark_ts == naive("2025-01-11 10:00")

    # nothing landed since, and the seed committed no snapshot since: dim_channel is idle too, and
    # the run commits no watermark at all (before, a seed among its inputs made it run every time)
    channel = (base.snapshot_id("marts.dim_channel"), control("dim_channel"))
    base.dbt_run("--select", "dim_channel")
    statements = last_invocation_statements()
    assert any("nothing to merge" in s for s in statements if "model.backfill_safe.dim_channel" in s)
    assert not [s for s in statements if "etl_watermark as target" in s]
    assert (base.snapshot_id("marts.dim_channel"), control("dim_channel")) == channel
    # the seed changes (a commit since the last run started): dim_channel reads it
    seeded = base.snapshot_id("reference.channels")
    base.spark.sql("insert into reference.channels values ('kiosk', 'Kiosk', 'offline')")
    base.dbt_run("--select", "dim_channel")
    assert base.rows("select channel_name from marts.dim_channel where channel = 'kiosk'")[0].channel_name == "Kiosk"
    ran = control("dim_channel").last_run_started_at
    assert ran > channel[1].last_run_started_at
    # the seed goes back to a snapshot older than that run (as a rollback, or a published branch,
    # moves a table): no snapshot is new, the table changed all the same, and dim_channel runs
    base.spark.sql(f"call spark_catalog.system.rollback_to_snapshot('reference.channels', {seeded})")
    base.dbt_run("--select", "dim_channel")
    assert control("dim_channel").last_run_started_at > ran

    # a customer lands, stamped long before the window: dim_customer reads it at once (its landing
    # bound is still the start of the run before)
    base.land(customers=[customer(2, "2024-06-01 00:00", segment="business")])
    base.dbt_run("--select", "dim_customer", "dim_product")
    assert base.rows("select segment from marts.dim_customer where customer_id = 2")[0].segment == "business"
    assert control("dim_customer").last_run_started_at > recorded["dim_customer"].last_run_started_at
    assert base.snapshot_id("marts.dim_product") == snapshots["dim_product"]


def test_a_model_whose_sources_never_held_a_row_is_skipped_once_it_ran(base: Warehouse):
    # the rides example's sources are empty here; the module's build ran its models all the same.
    # Each has a row without a watermark (none can exist) but with the build's start, so the next
    # run finds nothing landed since and skips them: no staged source, no MERGE, no watermark
    # statement (before, no row was written, and every run redid their whole staging for nothing)
    empty = {"dim_driver": "raw.drivers", "fct_trip": "raw.trips"}
    recorded = {r.pipeline_name: r for r in base.rows(
        "select * from control.etl_watermark where pipeline_name in ('dim_driver', 'fct_trip')")}
    assert set(recorded) == set(empty)
    assert all(r.watermark_ts is None and r.last_run_started_at is not None for r in recorded.values())
    assert not base.rows(f"select 1 from {' union all select 1 from '.join(empty.values())}")

    base.land(orders=[order(103, "2025-01-11 10:00")], order_items=[item(103, 1, "2025-01-11 10:00")])
    # the empty domain's models beside a fact that has rows to load
    results = {r.name: r for r in base.dbt_run("--select", *empty, "fct_order_item")}
    statements = last_invocation_statements()
    for model in empty:
        assert results[model].status == "success", model
        mine = [s for s in statements if f'"node_id": "model.backfill_safe.{model}"' in s]
        assert any("nothing to merge" in s for s in mine), model
        assert not [s for s in mine if "create table" in s or "merge into" in s], model
        # nor any other statement of the run: no select analysed, no describe, no scope
        assert not [s for s in mine if "temporary view" in s or "describe" in s or "cache table" in s], model
    assert base.watermark("fct_order_item") == naive("2025-01-11 10:00")
    # the run records read the snapshots of the table that committed, not the idle ones' (idle_runs),
    # and record the idle runs all the same, with nothing committed
    snapshot_reads = [s for s in statements if "added-records" in s and ".snapshots" in s]
    assert snapshot_reads and all("fct_order_item.snapshots" in s for s in snapshot_reads)
    assert not [s for s in snapshot_reads for model in empty if f"{model}.snapshots" in s]
    runs = {r.model_name: r for r in base.rows(
        f"select * from control.run_records where invocation_id = '{base.dbt.last_invocation_id()}'")}
    assert {model: runs[model].snapshots_committed for model in empty} == {model: 0 for model in empty}
    assert runs["fct_order_item"].snapshots_committed >= 1

    # their first row lands: read in full (still no watermark to bound it), loaded, watermarked
    base.land(drivers=[driver(7, "2024-12-01 00:00", rate="0.2000")], trips=[trip(1, "2025-01-02 10:00")])
    base.dbt_run("--select", *empty)
    assert [r.trip_id for r in base.rows("select trip_id from marts.fct_trip")] == [1]
    assert base.watermark("fct_trip") == naive("2025-01-02 10:00")
    assert base.watermark("dim_driver") is not None


def test_the_calendar_is_left_alone_until_its_spine_vars_move(base: Warehouse):
    days = base.rows("select count(*) as n, max(date_day) as last from marts.dim_date")[0]
    snapshot = base.snapshot_id("marts.dim_date")
    base.dbt_run("--select", "dim_date")
    assert base.snapshot_id("marts.dim_date") == snapshot  # every day held: nothing compared, nothing merged
    base.dbt_run("--select", "dim_date", "--vars", "{date_spine_end: '2028-01-31'}")
    extended = base.rows("select count(*) as n, max(date_day) as last from marts.dim_date")[0]
    assert (extended.n, str(extended.last)) == (days.n + 31, "2028-01-31")
    [day] = base.rows("select * from marts.dim_date where date_key = 20280131")
    assert (day.day_name, day.month_name, day.is_weekend) == ("Monday", "January", False)
    for bad in ("{date_spine_end: '2028-02-30'}", "{date_spine_end: \"2028-01-31' or 1=1\"}",
                "{date_spine_start: '2029-01-01'}"):
        [failed] = [r for r in base.dbt.invoke("run", "--select", "dim_date", "--vars", bad, check=False)
                    if r.name == "dim_date"]
        assert failed.status == "error" and "date_spine" in failed.message, (bad, failed.message)


def test_the_channel_dimension_reads_no_order_version_unless_a_landed_one_names_a_new_channel(base: Warehouse):
    """dim_channel, a reference table: its select reads the current versions of the orders with
    a version landed since its last run that names a channel the table lacks
    (landed_since_last_run with new_values_of), none on most days, and merges only a new one."""
    compiled = Path(os.environ["DBT_TARGET_PATH"]) / "compiled" / "backfill_safe" / "models" / "marts" / "dim_channel.sql"
    snapshot = base.snapshot_id("marts.dim_channel")
    # orders of channels the table holds: no order version is read (the filter is false), no
    # row is staged or merged
    base.land(orders=[order(103, "2025-01-11 10:00", channel="app")], order_items=[item(103, 1, "2025-01-11 10:00")])
    base.dbt_run("--select", "dim_channel", "fct_order_item")
    assert re.search(r"channel is not null\s+and false", compiled.read_text()), compiled.read_text()
    assert base.snapshot_id("marts.dim_channel") == snapshot
    assert (103, 1) in base.fact_lines()

    # a current version names a new channel; a late, older version of 102 names another, but
    # 102's current version names web: only the current one's channel is added (as a full build)
    base.land(orders=[order(104, "2025-01-11 11:00", channel=" Kiosk "),
                      order(102, "2025-01-10 10:00", "2025-01-10 09:00", channel="fax")],
              order_items=[item(104, 1, "2025-01-11 11:00")])
    base.dbt_run("--select", "dim_channel")
    assert re.search(r"order_id in \(select landed\.order_id from raw\.orders as landed where"
                     r" landed\._loaded_at > .* and not exists \(select 1 from marts\.dim_channel as held",
                     compiled.read_text()), compiled.read_text()
    channels = {row.channel: (row.channel_name, row.channel_group)
                for row in base.rows("select channel, channel_name, channel_group from marts.dim_channel")}
    assert channels["kiosk"] == ("Kiosk", "unknown")
    assert "fax" not in channels and channels["web"] == ("Web shop", "online")
    incremental = base.table("marts.dim_channel")
    base.dbt_run("--select", "dim_channel", "--full-refresh")
    assert base.table("marts.dim_channel") == incremental


def test_a_view_is_replaced_only_when_its_definition_changed_or_a_full_refresh_asks(base: Warehouse):
    from pipeline import paths

    def properties(view: str) -> dict[str, str]:
        return {r.key: r.value for r in base.rows(f"show tblproperties {view}")}

    # the views are Iceberg views (the session catalog is Iceberg's): every replacement writes a
    # new metadata file, so an unchanged metadata_location means the view was left alone. The
    # audit view is the framework's (on-run-end, after a run of a declared model or its current
    # state), the staging view a model's.
    views = ("staging.stg_shop__orders", "audit.audit_unreflected_changes")
    built = {view: properties(view) for view in views}
    for view in views:
        assert len(built[view]["backfill_safe.view_md5"]) == 32, view
    assert ",".join(sorted(iceberg.audited_models(base.spark, views[1]))) == (
        "agg_customer_orders,agg_daily_city_trips,agg_daily_revenue,fct_order_item,fct_orders,fct_trip")
    selected = ("--select", "stg_shop__orders", "int_orders__current_state")

    results = {r.name: r for r in base.dbt_run(*selected)}
    assert {results[name].status for name in selected[1:]} == {"success"}
    assert {view: properties(view) for view in views} == built  # unchanged: not replaced

    # a var the audit view renders changes its definition: a run of no declared model leaves it
    # alone (the hook reads nothing then); the next run of one replaces that view alone
    window = int(paths.project_var("restatement_window_days")["default"]) + 5
    base.dbt_run("--select", "stg_shop__orders", "--vars", f"{{restatement_window_days: {{default: {window}}}}}")
    assert {view: properties(view) for view in views} == built
    base.dbt_run(*selected, "--vars", f"{{restatement_window_days: {{default: {window}}}}}")
    audit = properties("audit.audit_unreflected_changes")
    assert audit["metadata_location"] != built[views[1]]["metadata_location"]
    assert audit["backfill_safe.view_md5"] != built[views[1]]["backfill_safe.view_md5"]
    # the audit of each model is a view of its own, named by its SQL's md5: the new window's is
    # a new view, from the part the new top reads (macro replace_audit_tree)
    [part] = audit["backfill_safe.audit_parts"].split(",")
    part_sql = base.rows(f"show create table {part}")[0][0]
    [member] = re.findall(r"audit\.unreflected_changes__fct_order_item__[0-9a-f]{12}", part_sql)
    sql = base.rows(f"show create table {member}")[0][0]
    assert re.search(rf"date_sub\(cast\(watermark_ts as date\), {window}\) as restatement_start", sql)
    assert properties("staging.stg_shop__orders") == built[views[0]]
    assert base.rows("select count(*) as n from audit.audit_unreflected_changes")[0].n == 0

    # a full refresh replaces an unchanged view too (what the md5 cannot see: a table it reads)
    base.dbt_run("--select", "stg_shop__orders", "--full-refresh")
    staged = properties("staging.stg_shop__orders")
    assert staged["metadata_location"] != built[views[0]]["metadata_location"]
    assert staged["backfill_safe.view_md5"] == built[views[0]]["backfill_safe.view_md5"]
    assert {r.order_id for r in base.rows("select order_id from staging.stg_shop__orders")} == {101, 102}

    # what readers get is the new definition: a `create or replace view` left the metastore's SQL
    # text, which Spark reads, on the old one (apache/iceberg PR 15490), so a view is dropped and
    # created. A var of the staging view's quarantine rule: with a tolerance of minus 19 years
    # every version is "later than its landing" and held back; then the default again.
    base.dbt_run("--select", "stg_shop__orders", "--vars", "{clock_skew_tolerance_minutes: -10000000}")
    assert base.rows("select order_id from staging.stg_shop__orders") == []
    base.dbt_run("--select", "stg_shop__orders")
    assert {r.order_id for r in base.rows("select order_id from staging.stg_shop__orders")} == {101, 102}
