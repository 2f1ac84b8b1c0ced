"""The incremental rules on one hand-made scenario, built once for the module.

Base day: nine orders over 2025-01-01 .. 2025-01-10, built from scratch (watermark then
2025-01-10 10:00, so the next run's window starts at 2025-01-07 10:00 with the 3-day lookback).
Next day (2025-01-11), one case of each kind:
  101  a line corrected (quantity 2 -> 5): old ordered_at 2025-01-02, new updated_at
  102  header-only change (channel app -> phone), lines untouched
  103  ordered_at corrected 2025-01-04 -> 2025-01-08 (moves partitions)
  104  order deleted
  105  line 1 corrected and landed three times (duplicates), line 2 deleted
  106  a newer header version (shipped), then an older one landing after it (out of order)
  107  product 2 gets a late version effective 2025-01-09 (cost 10 -> 12): restates its cost
  108, 109  untouched (their partitions 2025-01-07 and 2025-01-01 must not be rewritten); 108's
            line is of product 2, ordered before its new version: out of the run's scope
Then the same run again with no new data, then a full refresh.
"""

from __future__ import annotations

import re

import os
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from domains import SHOP_ONLY
from helpers import (SHOP_MARTS, Warehouse, customer, item, last_invocation_statements, order, product,
                     scope_relations, shared_scope_views, ts)
from pipeline import iceberg

# a module with a build of its own: scripts/test.sh runs it in the second process, beside the
# main one, to even the two processes' time
pytestmark = pytest.mark.beside

FACT = "marts.fct_order_item"
MARTS = tuple(f"marts.{name}" for name in SHOP_MARTS)


def md5_key(*parts: object) -> str:
    import hashlib

    return hashlib.md5("-".join(str(p) for p in parts).encode()).hexdigest()


@dataclass
class Scenario:
    base: dict = field(default_factory=dict)
    after: dict = field(default_factory=dict)
    row_files_before: dict = field(default_factory=dict)  # (order, line) -> the data file holding its row
    row_files_after: dict = field(default_factory=dict)
    orders_after: dict = field(default_factory=dict)
    dim_product: list = field(default_factory=list)
    fact_change: iceberg.Change | None = None
    files_before: dict = field(default_factory=dict)
    files_after: dict = field(default_factory=dict)
    watermark_before: object = None
    watermark_after: object = None
    build_results: list = field(default_factory=list)
    tables_after: dict = field(default_factory=dict)
    rerun_change: dict = field(default_factory=dict)  # table -> summary of a new snapshot, if any
    merge_sql: dict = field(default_factory=dict)  # fact -> the MERGE its incremental run executed
    scope_orders: dict = field(default_factory=dict)  # fact -> the orders its incremental run recomputed
    build_statements: list = field(default_factory=list)  # the dbt build's logged statements
    scope_versions: dict = field(default_factory=dict)  # (fact, raw table) -> (cached versions, raw's)
    scratch_after: list = field(default_factory=list)
    tables_after_rerun: dict = field(default_factory=dict)
    watermark_after_rerun: object = None
    tables_after_full_refresh: dict = field(default_factory=dict)


@pytest.fixture(scope="module")
def scenario(spark, dbt, tmp_path_factory) -> Scenario:
    wh = Warehouse.empty(spark, dbt, tmp_path_factory.mktemp("scenario"), SHOP_ONLY)
    s = Scenario()
    wh.land(
        customers=[customer(1, "2024-12-01 00:00"), customer(2, "2024-12-01 00:00")],
        products=[product(1, "2024-12-01 00:00", unit_cost="5.00"), product(2, "2024-12-01 00:00", unit_cost="10.00")],
        orders=[
            order(101, "2025-01-02 10:00"), order(102, "2025-01-03 10:00", channel="app"),
            order(103, "2025-01-04 10:00", channel="store"), order(104, "2025-01-05 10:00"),
            order(105, "2025-01-06 10:00", customer_id=2), order(106, "2025-01-10 10:00"),
            order(107, "2025-01-09 12:00"), order(108, "2025-01-07 10:00"), order(109, "2025-01-01 10:00"),
        ],
        order_items=[
            item(101, 1, "2025-01-02 10:00", quantity=2), item(101, 2, "2025-01-02 10:00", product_id=2, unit_price="20.00", discount="1.00"),
            item(102, 1, "2025-01-03 10:00"), item(103, 1, "2025-01-04 10:00", product_id=2, quantity=3, unit_price="20.00"),
            item(104, 1, "2025-01-05 10:00"), item(105, 1, "2025-01-06 10:00"), item(105, 2, "2025-01-06 10:00", quantity=2),
            item(106, 1, "2025-01-10 10:00"), item(107, 1, "2025-01-09 12:00", product_id=2, quantity=2, unit_price="20.00"),
            item(108, 1, "2025-01-07 10:00", product_id=2), item(109, 1, "2025-01-01 10:00"),
        ],
    )
    wh.build_all()
    s.base = wh.fact_lines()
    s.row_files_before = row_files(wh)
    s.watermark_before = wh.watermark("fct_order_item")
    before = wh.snapshot_id(FACT)
    s.files_before = wh.files_by_partition(FACT)

    correction_105 = item(105, 1, "2025-01-11 10:00", quantity=4)
    wh.land(
        orders=[
            order(102, "2025-01-03 10:00", "2025-01-11 08:00", channel="phone"),
            order(103, "2025-01-08 10:00", "2025-01-11 08:30", channel="store"),
            order(104, "2025-01-05 10:00", "2025-01-11 09:00", is_deleted=True),
            order(106, "2025-01-10 10:00", "2025-01-11 08:00", status="shipped"),
        ],
        order_items=[
            item(101, 1, "2025-01-11 09:00", quantity=5),
            correction_105, correction_105,
            item(105, 2, "2025-01-11 10:30", quantity=2, is_deleted=True),
        ],
        products=[product(2, "2025-01-09 00:00", unit_cost="12.00")],
    )
    # landed after the newer version of 106, with an older updated_at and other values
    wh.land(
        orders=[order(106, "2025-01-10 10:00", "2025-01-10 12:00", channel="marketplace", status="cancelled")],
        order_items=[correction_105],
    )
    s.build_results = wh.dbt_build()
    s.build_statements = last_invocation_statements()
    # dbt writes each node's executed statement (the MERGE, for an incremental run) under target/run
    run_folder = Path(os.environ["DBT_TARGET_PATH"]) / "run" / "backfill_safe" / "models" / "marts"
    s.merge_sql = {fact: (run_folder / f"{fact}.sql").read_text() for fact in ("fct_order_item", "fct_orders")}
    compiled_folder = Path(os.environ["DBT_TARGET_PATH"]) / "compiled" / "backfill_safe" / "models" / "marts"
    s.compiled_sql = {fact: (compiled_folder / f"{fact}.sql").read_text() for fact in ("fct_order_item", "fct_orders")}
    # the run's scope, as scope_keys_cached cached it in this (the embedded engine's) session:
    # the views each fact's staged rows read (the invocation's shared ones, or its own)
    s.scope_views = {fact: scope_relations(fact, ("shop.orders", "shop.order_items", "shop.customers"))
                     for fact in ("fct_order_item", "fct_orders")}
    s.scope_orders = {fact: sorted(r.order_id for r in wh.rows(f"select order_id from {views['keys']}"))
                      for fact, views in s.scope_views.items()}
    # the raw versions of those orders, as scope_keys_cached cached them, against raw itself
    s.scope_versions = {
        (fact, table): tuple(sorted(map(repr, wh.rows(query))) for query in (
            f"select * from {views['shop.' + table]}",
            f"select * from raw.{table} where order_id in (select order_id from {views['keys']})"))
        for fact, views in s.scope_views.items() for table in ("orders", "order_items")}
    # the versions of the customers those orders' versions name, cached, against raw
    s.scope_versions.update({
        (fact, "customers"): tuple(sorted(map(repr, wh.rows(query))) for query in (
            f"select * from {views['shop.customers']}",
            "select * from raw.customers where customer_id in"
            f" (select customer_id from raw.orders where order_id in (select order_id from {views['keys']}))"))
        for fact, views in s.scope_views.items()})
    # the changed orders and their raw versions as the two facts shared them (scope_shared_cache)
    s.shared_views = shared_scope_views(wh)
    s.scratch_after = [row.tableName for row in wh.rows("show tables in scratch") if not row.isTemporary] \
        if spark.catalog.databaseExists("scratch") else []
    s.after = wh.fact_lines()
    s.row_files_after = row_files(wh)
    s.orders_after = {r.order_id: r for r in wh.rows("select * from marts.fct_orders")}
    s.dim_product = wh.rows("select * from marts.dim_product order by product_id, valid_from")
    s.fact_change = iceberg.change_since(spark, FACT, before, "order_item_sk")
    s.files_after = wh.files_by_partition(FACT)
    s.watermark_after = wh.watermark("fct_order_item")
    s.tables_after = {t: wh.table(t) for t in MARTS}

    snapshots = {t: wh.snapshot_id(t) for t in MARTS}
    wh.dbt_run()
    s.rerun_change = {
        t: wh.rows(f"select summary from {t}.snapshots order by committed_at desc limit 1")[0].summary
        if wh.snapshot_id(t) != snapshots[t] else {} for t in MARTS
    }
    s.tables_after_rerun = {t: wh.table(t) for t in MARTS}
    s.shared_views_after_rerun = shared_scope_views(wh)
    s.watermark_after_rerun = wh.watermark("fct_order_item")

    wh.dbt_run("--full-refresh")
    s.tables_after_full_refresh = {t: wh.table(t) for t in MARTS}
    return s


def row_files(wh: Warehouse) -> dict[tuple[int, int], str]:
    """The data file each live row of the fact is read from (Iceberg's `_file` metadata column):
    a row the MERGE rewrote, even with the same values, is read from a new file."""
    return {(r.order_id, r.order_item_id): r._file
            for r in wh.rows(f"select order_id, order_item_id, _file from {FACT}")}


def test_correction_with_old_order_date_and_new_update_time_is_merged(scenario):
    line = scenario.after[(101, 1)]
    assert scenario.base[(101, 1)].quantity == 2
    assert (line.quantity, line.net_amount, line.order_date) == (5, Decimal("50.00"), date(2025, 1, 2))
    assert line.updated_at == ts("2025-01-11 09:00").replace(tzinfo=None)


def test_header_only_change_restates_its_lines(scenario):
    assert scenario.base[(102, 1)].channel_key == md5_key("app")
    assert scenario.after[(102, 1)].channel_key == md5_key("phone")
    assert scenario.orders_after[102].channel_key == md5_key("phone")


def test_ordered_at_correction_moves_lines_to_the_new_partition_and_leaves_no_copy(scenario):
    lines = [key for key in scenario.after if key[0] == 103]
    assert lines == [(103, 1)]
    assert scenario.after[(103, 1)].order_date == date(2025, 1, 8)
    assert scenario.after[(103, 1)].order_date_key == 20250108
    assert scenario.orders_after[103].order_date == date(2025, 1, 8)


def test_older_version_landing_after_a_newer_one_is_ignored(scenario):
    assert scenario.orders_after[106].status == "shipped"
    assert scenario.orders_after[106].channel_key == md5_key("web")


def test_duplicate_versions_are_deduped_to_one_row(scenario):
    assert [key for key in scenario.after if key[0] == 105] == [(105, 1)]
    assert scenario.after[(105, 1)].quantity == 4
    assert scenario.orders_after[105].item_count == 1


def test_deletes_remove_lines_and_orders(scenario):
    assert (104, 1) in scenario.base and (104, 1) not in scenario.after
    assert (105, 2) in scenario.base and (105, 2) not in scenario.after
    assert 104 not in scenario.orders_after


def test_late_product_version_restates_the_cost_of_the_lines_it_now_covers(scenario):
    assert scenario.base[(107, 1)].cost_amount == Decimal("20.00")
    assert scenario.after[(107, 1)].cost_amount == Decimal("24.00")
    assert scenario.after[(107, 1)].product_key == md5_key(2, "2025-01-09 00:00:00")
    # ordered before the new version: still the old cost
    assert scenario.after[(103, 1)].cost_amount == Decimal("30.00")


def test_a_late_product_version_reaches_only_the_orders_placed_after_it(scenario):
    # 101-106 changed; 107 holds a line of product 2 placed after its new version (2025-01-09);
    # 108 holds one placed before it (2025-01-07) and nothing of it changed: not recomputed
    assert scenario.scope_orders["fct_order_item"] == scenario.scope_orders["fct_orders"]
    assert scenario.scope_orders["fct_order_item"] == [101, 102, 103, 104, 105, 106, 107]  # 108, 109 out
    assert scenario.after[(108, 1)] == scenario.base[(108, 1)]
    assert scenario.after[(108, 1)].product_key == md5_key(2, "2024-12-01 00:00:00")


def test_type2_product_dimension_closes_the_previous_version(scenario):
    versions = [(r.product_id, r.unit_cost, r.valid_to, r.is_current) for r in scenario.dim_product if r.product_id == 2]
    assert versions == [
        (2, Decimal("10.00"), ts("2025-01-09 00:00").replace(tzinfo=None), False),
        (2, Decimal("12.00"), None, True),
    ]


def test_untouched_lines_are_not_rewritten(scenario):
    # 108 and 109 are out of the run's scope; 101's second line is in it (its order changed) but
    # unchanged: each is still read from the data file the build wrote it to, with its values
    rewritten = {key for key in scenario.row_files_after
                 if scenario.row_files_after[key] != scenario.row_files_before.get(key)}
    assert {(108, 1), (109, 1), (101, 2)}.isdisjoint(rewritten)
    # the changed lines are the ones read from new files (inserted or updated by the MERGE)
    assert rewritten == {(101, 1), (102, 1), (103, 1), (105, 1), (106, 1), (107, 1)}
    for key in [(108, 1), (109, 1), (101, 2)]:
        assert scenario.after[key] == scenario.base[key]


def test_merge_rewrites_only_the_partitions_of_changed_rows(scenario):
    # dates holding changed rows: 101 (01-02), 102 (01-03), 103 (01-04 and 01-08), 104 (01-05),
    # 105 (01-06), 106 (01-10, header restated), 107 (01-09)
    assert scenario.fact_change.changed_partitions == 8
    for untouched in [(date(2025, 1, 1),), (date(2025, 1, 7),)]:
        assert scenario.files_after[untouched] == scenario.files_before[untouched]
    assert scenario.fact_change.snapshots == 1


def test_merge_writes_only_the_changed_rows_and_deletes_the_old_ones_by_position(scenario):
    # merge-on-read: the MERGE adds the new versions of the changed rows and position deletes of
    # their old versions and of the deleted rows; no data file holding an untouched row is
    # rewritten (copy-on-write would add and delete every row of each touched file)
    change = scenario.fact_change
    assert change.added_records == change.inserted + change.updated == 6
    assert change.deleted_records == change.updated + change.deleted == 8


def test_facts_merge_from_a_staged_source_dropped_after_the_merge(scenario):
    # the MERGE reads a table written once (not the select, evaluated again by each MERGE pass),
    # and the post-hook leaves no scratch table behind
    for fact, sql in scenario.merge_sql.items():
        assert f"using scratch.{fact}__merge_source_" in sql, sql
    assert scenario.scratch_after == []


def test_facts_merge_names_the_orders_of_their_staged_source(scenario):
    # the target rows the MERGE can match belong to the orders whose rows changed: as literals,
    # they filter the target before the MERGE's join (108, 109 untouched: not named)
    for fact, sql in scenario.merge_sql.items():
        assert "DBT_INTERNAL_DEST.order_id in (101, 102, 103, 104, 105, 106, 107)" in sql, sql


def test_facts_compare_with_their_table_only_for_the_orders_in_scope(scenario):
    # the rows to merge (the materialization stages them to scratch) read the table's rows of
    # the run's orders (a semi-join on the cached scope), not every row of the order dates they
    # touch, before joining them to the current state
    for fact in ("fct_order_item", "fct_orders"):
        [sql] = [s for s in scenario.build_statements
                 if f"create table scratch.{fact}__merge_source_" in s and ") as existing" in s]
        existing = sql[max(0, sql.index(") as existing") - 400):sql.index(") as existing")]
        assert f"and order_id in (select order_id from {scenario.scope_views[fact]['keys']})" in existing, sql


def test_facts_read_the_raw_versions_of_their_orders_and_customers_once(scenario):
    # the versions of the run's orders and lines are read from raw once, into cached views, and
    # every reference of the select (staging, current state, the customers they name) reads
    # those: the compiled select never scans raw.orders, raw.order_items or raw.customers itself
    for fact, sql in scenario.compiled_sql.items():
        assert "raw.order_items" not in sql and "raw.orders" not in sql and "raw.customers" not in sql, fact
        for table in ("orders", "order_items", "customers"):
            assert scenario.scope_views[fact]["shop." + table] in sql, (fact, table)
    for (fact, table), (cached, raw) in scenario.scope_versions.items():
        assert cached == raw and len(cached) > 0, (fact, table)


def test_each_control_question_is_asked_once_per_run_whichever_model_asks_it(scenario):
    # every model's watermark and recorded start (one read of the watermark table answers them
    # all), whether anything landed since (one read of every source's latest landing answers
    # every model: latest_landed), its scope's order dates, the first product change:
    # asked by its select, its MERGE and its post-hook, some by both facts in the same words, each
    # run once per invocation (memoized_rows; the watermarks move only when the invocation ends,
    # so no answer goes stale inside it)
    def sql(statement: str) -> str:  # the statement without its query comment and the log after it
        return re.split(r"\n\S*\d\d:\d\d:\d\d\.\d+ \[", statement.split("*/", 1)[1])[0].strip()

    statements = scenario.build_statements
    plain_read = re.compile(r"select [\w, ]+ from control\.etl_watermark\b[^()]*$")
    models_reads = [sql(s) for s in statements if '"node_id": "model.' in s and plain_read.match(sql(s))]
    assert models_reads == ["select pipeline_name, watermark_ts, last_run_started_at from control.etl_watermark"]
    asked = []
    for fact, landed_table in (("fct_order_item", "raw.order_items"), ("fct_orders", "raw.orders")):
        # its scope's order dates: asked once in the invocation (by the first fact to ask, when
        # both read the shared versions)
        question = ("select distinct date_format(ordered_at, 'yyyy-MM-dd') as event_date from "
                    f"{scenario.scope_views[fact]['shop.orders']} ")
        assert sum(question in statement for statement in statements) == 1, (fact, question)
        # whether anything landed: one read of every source's latest landing for the whole run
        for question in (f"as latest from {landed_table} where _loaded_at >",
                         "select date_format(min(updated_at), 'yyyy-MM-dd HH:mm:ss.SSSSSS') from raw.products"):
            found = [sql(s) for s in statements if question in s]
            assert found, (fact, question)
            asked += found
    # the questions both facts ask in the same words were asked once: no statement repeats
    texts = [sql(s) for s in statements]
    assert [q for q in set(asked) if texts.count(q) != 1] == []


def test_the_facts_of_one_run_share_the_cached_versions_of_their_changed_orders(scenario):
    # fct_order_item and fct_orders find the same changed orders (same watermark, same landing
    # bound): the first caches them and their raw versions once, the second reads that cache
    # (the versions each fact read equal raw's: test above)
    views = scenario.shared_views
    assert sorted(name.split("__")[0] for name in views) == [
        "scope_shared_changed", "scope_shared_versions_shop_customers", "scope_shared_versions_shop_order_items",
        "scope_shared_versions_shop_orders"], views
    assert len({name.split("__")[1] for name in views}) == 1, views
    assert scenario.scope_orders["fct_order_item"] == scenario.scope_orders["fct_orders"] != []
    # an idle rerun caches nothing (it only probes what landed) and so leaves the one run's
    # caches as they were; a run that caches drops another invocation's first
    # (test_rules_by_domain.py, the daily runs of its full refresh test)
    assert scenario.shared_views_after_rerun == views, (views, scenario.shared_views_after_rerun)


def test_changelog_counts_match_the_cases(scenario):
    change = scenario.fact_change
    # updated: 101/1, 102/1, 103/1, 105/1, 106/1, 107/1; deleted: 104/1, 105/2
    assert (change.inserted, change.updated, change.deleted) == (0, 6, 2)


def test_watermark_advances_to_the_greatest_update_time_loaded(scenario):
    assert scenario.watermark_before == ts("2025-01-10 10:00").replace(tzinfo=None)
    assert scenario.watermark_after == ts("2025-01-11 10:30").replace(tzinfo=None)


def test_data_tests_pass_after_the_incremental_run(scenario):
    tests = [r for r in scenario.build_results if r.resource_type == "test"]
    assert len(tests) > 30
    assert {r.status for r in tests} == {"pass"}


def test_rerun_without_new_data_changes_nothing(scenario):
    assert scenario.tables_after_rerun == scenario.tables_after
    for table, summary in scenario.rerun_change.items():
        assert int(summary.get("added-records", 0)) == 0, table
        assert int(summary.get("deleted-records", 0)) == 0, table
        assert int(summary.get("changed-partition-count", 0)) == 0, table
    assert scenario.watermark_after_rerun == scenario.watermark_after


def test_full_refresh_equals_the_incremental_result(scenario):
    assert scenario.tables_after_full_refresh == scenario.tables_after
