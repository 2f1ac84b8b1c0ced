"""A model over one model of the kind whose measures are sums and counts (its declaration's
`additive`: the rides' agg_daily_city_trips, the shop's agg_customer_orders) applies what its
upstream's runs changed as deltas: after minus before, from the upstream's change records since
the point its table holds, a point published with its data in its snapshot's summary (its full
build marks it too); its min and max columns are kept from the same images, a group recomputed
only when the row holding its extreme left it. Each rides test starts from the built rides (the
shared build of test_rides_example) after one daily run."""

from __future__ import annotations

import pytest

from domains import RIDES as RIDES_DOMAIN
from domains import SHOP, SHOP_AGGREGATES, stale_aggregates
from helpers import Warehouse, last_invocation_statements, order, trip

RIDES = RIDES_DOMAIN.select
AGG = "marts.agg_daily_city_trips"
COLUMNS = "daily_city_key, trip_date, city, trip_count, distance_km, fare_amount, commission_amount"
MARK = "backfill_safe.consumed|"


@pytest.fixture
def marked(examples_built) -> Warehouse:
    """The built rides after one run with a change (trip 9, a new date and city), added to the
    aggregate's table as a delta and marked."""
    wh = examples_built.fresh()
    wh.land(trips=[trip(9, "2025-01-10 09:00", "2025-01-11 08:00", city="Potsdam")])
    wh.dbt_run(*RIDES)
    assert current_mark(wh).startswith(MARK)
    assert equals_its_select(wh)
    # its full build marked the table: this first daily run added deltas, the fact not read
    assert not any(t.endswith("fct_trip") for t in tables_read(wh, "agg_daily_city_trips"))
    return wh


def current_mark(wh: Warehouse) -> str:
    [row] = wh.rows(f"select s.summary['wap.id'] as mark from {AGG}.refs as r join {AGG}.snapshots as s"
                    " on s.snapshot_id = r.snapshot_id where r.name = 'main'")
    return row.mark or ""


def groups(wh: Warehouse) -> dict[tuple[str, str], tuple]:
    return {(str(r.trip_date), r.city): (r.trip_count, r.fare_amount)
            for r in wh.rows(f"select * from {AGG}")}


def equals_its_select(wh: Warehouse) -> bool:
    """The aggregate's table holds exactly what its select gives over fct_trip now."""
    return wh.table(f"(select {COLUMNS} from {AGG})") == wh.table(f"(select {COLUMNS} from {AGG}__current_state)")


def tables_read(wh: Warehouse, model: str) -> set[str]:
    """The tables the latest run of `model` read (control.run_scans)."""
    return {r.table_name for r in wh.rows(
        f"select table_name from control.run_scans where model_name = '{model}' and invocation_id = (select "
        f"max_by(invocation_id, started_at) from control.run_records where model_name = '{model}')")}


def test_a_daily_run_adds_the_changes_of_its_upstream_as_deltas_without_reading_it(marked: Warehouse):
    before = groups(marked)
    # a new trip in a new city (a new group), a fare corrected (an update), a trip deleted that
    # leaves its date and city empty (a deleted group), a trip added to a group
    marked.land(trips=[trip(4, "2025-01-10 12:00", "2025-01-11 09:00", fare="40.00", city="Hamburg"),
                       trip(2, "2025-01-10 10:00", "2025-01-11 09:00", fare="35.00"),
                       trip(3, "2025-01-09 12:00", "2025-01-11 09:00", driver_id=8, fare="10.00", is_deleted=True),
                       trip(5, "2025-01-10 13:00", "2025-01-11 09:00", fare="10.00")])
    marked.dbt_run(*RIDES)
    after = groups(marked)
    assert ("2025-01-09", "berlin") in before and ("2025-01-09", "berlin") not in after
    assert after[("2025-01-10", "hamburg")][0] == 1
    assert after[("2025-01-10", "berlin")][0] == before[("2025-01-10", "berlin")][0] + 1
    assert equals_its_select(marked)
    # the fact's table was not read: only its change records
    read = tables_read(marked, "agg_daily_city_trips")
    assert not any(t.endswith("fct_trip") for t in read), read
    assert current_mark(marked).startswith(MARK)
    # the groups' moves, evaluated once and staged to scratch, were dropped after the MERGE
    moves = [s.split("*/", 1)[-1].split("\x1b")[0].strip() for s in last_invocation_statements()
             if "agg_daily_city_trips__deltas_" in s]
    assert moves[0].startswith("create table scratch.") and moves[-1].startswith("drop table if exists"), moves
    assert not [t.name for t in marked.spark.catalog.listTables("scratch") if "__deltas_" in t.name]
    # a trip moved to another city, its old group emptied; a trip whose fare is unknown alone in
    # its group (a sum over nulls is null: that date is recomputed)
    marked.land(trips=[trip(4, "2025-01-10 12:00", "2025-01-11 10:00", fare="40.00", city="Berlin"),
                       {**trip(6, "2025-01-11 07:00", "2025-01-11 10:00", city="Leipzig"), "fare_amount": None}])
    marked.dbt_run(*RIDES)
    after = groups(marked)
    assert ("2025-01-10", "hamburg") not in after and after[("2025-01-11", "leipzig")] == (1, None)
    assert equals_its_select(marked)


def test_rolling_the_aggregate_back_rolls_back_its_mark_and_the_next_run_applies_the_changes_again(
        marked: Warehouse):
    marked_at = marked.snapshot_id(AGG)
    marked.land(trips=[trip(5, "2025-01-10 13:00", "2025-01-11 09:00", fare="10.00")])
    marked.dbt_run(*RIDES)
    assert marked.snapshot_id(AGG) != marked_at and equals_its_select(marked)
    marked.spark.sql(f"call spark_catalog.system.rollback_to_snapshot('{AGG}', {marked_at})")
    assert not equals_its_select(marked)
    marked.land(trips=[trip(7, "2025-01-10 14:00", "2025-01-11 10:00", fare="12.00")])
    marked.dbt_run(*RIDES)
    assert equals_its_select(marked)


def test_a_change_record_of_an_upstream_run_that_did_not_succeed_is_recomputed_not_added(marked: Warehouse):
    # what a fact run leaves when its MERGE fails after its change records were written: records
    # of a change that never happened, and no successful run record
    marked.spark.sql(
        "insert into control.fct_trip__changes select 'new', 'a-run-that-failed', current_timestamp(), 99,"
        " date'2025-01-10', null, null, 'berlin', 1.00, 500.00, 50.00, current_timestamp()")
    marked.land(trips=[trip(5, "2025-01-10 13:00", "2025-01-11 09:00", fare="10.00")])
    marked.dbt_run(*RIDES)
    assert equals_its_select(marked)
    assert any(t.endswith("fct_trip") for t in tables_read(marked, "agg_daily_city_trips"))


def test_a_drifted_aggregate_fails_its_run_naming_its_groups_and_a_backfill_of_it_repairs_it(marked: Warehouse):
    import io

    from rich.console import Console

    from pipeline.backfill.runner import Backfill
    from pipeline.dbt import DbtError

    # a table that drifted from its fact under a valid mark (written as a run writes it): its group
    # (2025-01-02, berlin) says no trip, the fact holds trip 1
    forged = current_mark(marked).rsplit("|", 1)[0] + "|forged"
    marked.spark.conf.set("spark.wap.id", forged)
    try:
        marked.spark.sql(f"update {AGG} set trip_count = trip_count - 1 where trip_date = date'2025-01-02'")
    finally:
        marked.spark.conf.unset("spark.wap.id")
    [staged] = marked.rows(f"select snapshot_id from {AGG}.snapshots where summary['wap.id'] = '{forged}'")
    marked.spark.sql(f"call spark_catalog.system.cherrypick_snapshot('{AGG}', {staged.snapshot_id})")
    # trip 1 voided: the group would hold fewer than no trips
    marked.land(trips=[trip(1, "2025-01-02 10:00", "2025-01-11 09:00", is_deleted=True)])
    with pytest.raises(DbtError, match=r"contradict the table for 1 trip_date value\(s\)[^:]*: 2025-01-02; groups"):
        marked.dbt_run(*RIDES)
    assert current_mark(marked) == forged  # nothing was merged
    backfill = Backfill(marked.dbt, marked.spark, Console(file=io.StringIO(), width=200))
    plan = backfill.plan("2025-01-02", "2025-01-03", "agg_daily_city_trips", 1)
    assert backfill.status_of(backfill.start(plan, "a drifted aggregate")) == "published"
    assert equals_its_select(marked)
    # the next day applies deltas again, from a table the backfill left unmarked: it recomputes
    # once, marks it, and the day after adds
    marked.land(trips=[trip(5, "2025-01-10 13:00", "2025-01-11 10:00", fare="10.00")])
    marked.dbt_run(*RIDES)
    marked.land(trips=[trip(6, "2025-01-10 14:00", "2025-01-11 11:00", fare="10.00")])
    marked.dbt_run(*RIDES)
    assert equals_its_select(marked) and current_mark(marked).startswith(MARK)
    assert not any(t.endswith("fct_trip") for t in tables_read(marked, "agg_daily_city_trips"))


def test_a_run_whose_spark_session_other_threads_share_recomputes_and_says_so_and_the_next_adds_again(
        marked: Warehouse):
    # dbt-spark's session method with threads > 1: one Spark session for every thread, where the
    # mark (a session setting) would stage another model's write too: the run recomputes, unmarked
    marked.land(trips=[trip(5, "2025-01-10 13:00", "2025-01-11 09:00", fare="10.00")])
    _, said = marked.dbt.invoke_logging("model agg_daily_city_trips (additive): ", "run", *RIDES, "--threads", "2")
    assert len(said) == 1 and "adds no deltas and leaves its table unmarked" in said[0], said
    assert equals_its_select(marked)
    assert any(t.endswith("fct_trip") for t in tables_read(marked, "agg_daily_city_trips"))
    assert current_mark(marked) == ""  # its MERGE committed straight to main, under no mark
    # one thread: a table with no mark recomputes once and marks it; the day after adds
    for number, updated in ((6, "2025-01-11 10:00"), (7, "2025-01-11 11:00")):
        marked.land(trips=[trip(number, "2025-01-10 14:00", updated, fare="12.00")])
        marked.dbt_run(*RIDES)
        assert equals_its_select(marked) and current_mark(marked).startswith(MARK)
    assert not any(t.endswith("fct_trip") for t in tables_read(marked, "agg_daily_city_trips"))


def test_first_and_last_dates_move_by_the_changes_and_a_removed_extreme_is_recomputed(examples_built):
    """The shop's customer mart (count, sums, min and max of the order date) over its order fact;
    customer 1 holds orders 1 (2025-01-02), 3 (2025-01-09) and 2 (2025-01-10)."""
    wh = examples_built.fresh()
    customers = "marts.agg_customer_orders"

    def run_and_read() -> set[str]:
        wh.dbt_run(*SHOP.select, "+agg_customer_orders")
        assert stale_aggregates(wh, SHOP_AGGREGATES) == {}
        [row] = wh.rows(f"select first_order_date, last_order_date from {customers} where order_count > 1")
        dates.append((str(row.first_order_date), str(row.last_order_date)))
        return tables_read(wh, "agg_customer_orders")

    def mark() -> str:
        [row] = wh.rows(f"select s.summary['wap.id'] as mark from {customers}.refs as r join {customers}.snapshots"
                        " as s on s.snapshot_id = r.snapshot_id where r.name = 'main'")
        return row.mark or ""

    dates: list[tuple[str, str]] = []
    built_mark = mark()
    # the last order corrected, its date kept: the last date still held, nothing recomputed
    wh.land(orders=[order(2, "2025-01-10 10:00", "2025-01-10 11:00", status="shipped")])
    read = run_and_read()
    assert not any(t.endswith("fct_orders") for t in read), read
    # nothing moved, and the table is marked all the same: a run with nothing landed since is
    # idle (one statement finds nothing since the mark; its main statement reads and writes nothing)
    assert mark().startswith(MARK) and mark() != built_mark
    wh.dbt_run(*SHOP.select, "+agg_customer_orders")
    sent = [s.split("*/", 1)[-1].split("\x1b")[0].strip() for s in last_invocation_statements()
            if '"node_id": "model.backfill_safe.agg_customer_orders"' in s]
    assert len(sent) == 2 and sent[0].startswith("with marks as") and "nothing to merge" in sent[1], sent
    # a new last order, and an order moved before the first: both dates move by the images alone
    wh.land(orders=[order(4, "2025-01-12 09:00", "2025-01-10 12:00"),
                    order(3, "2025-01-01 09:00", "2025-01-10 12:00")])
    read = run_and_read()
    assert not any(t.endswith("fct_orders") for t in read), read
    # the last order deleted and the first moved later: the dates they held are gone, the
    # customer recomputed from the fact
    wh.land(orders=[order(4, "2025-01-12 09:00", "2025-01-10 13:00", is_deleted=True),
                    order(3, "2025-01-05 09:00", "2025-01-10 13:00")])
    read = run_and_read()
    assert any(t.endswith("fct_orders") for t in read), read
    assert dates == [("2025-01-02", "2025-01-10"), ("2025-01-01", "2025-01-12"),
                     ("2025-01-02", "2025-01-10")]
