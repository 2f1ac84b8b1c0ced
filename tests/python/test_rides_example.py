"""The second example domain (rides: one event table of trips and an effective-dated driver
dimension, a shape unlike the shop's orders and lines) gets the framework's guarantees from its
declarations alone: sources yml (the landing contract), and fct_trip's config.meta.backfill_safe.
No framework macro or Python names it. Each test starts from the same built warehouse."""

from __future__ import annotations

import io
from decimal import Decimal

import pytest
from rich.console import Console

from helpers import Warehouse, ts
from pipeline.backfill.runner import Backfill

RIDES = ("--select", "+fct_trip", "+dim_driver")


def trip(trip_id: int, picked_up_at: str, updated_at: str | None = None, *, driver_id: int | None = 7,
         fare: str = "20.00", city: str = "Berlin", is_deleted: bool = False) -> dict:
    return {"trip_id": trip_id, "driver_id": driver_id, "city": city,
            "picked_up_at": ts(picked_up_at) if picked_up_at else None, "distance_km": Decimal("5.00"),
            "fare_amount": Decimal(fare), "updated_at": ts(updated_at or picked_up_at), "is_deleted": is_deleted}


def driver(driver_id: int, updated_at: str, *, rate: str, is_deleted: bool = False) -> dict:
    return {"driver_id": driver_id, "driver_name": f"Driver {driver_id}", "vehicle_class": "standard",
            "commission_rate": Decimal(rate), "updated_at": ts(updated_at), "is_deleted": is_deleted}


def naive(text: str):
    return ts(text).replace(tzinfo=None)


@pytest.fixture(scope="module")
def built_once(spark, dbt, tmp_path_factory) -> tuple[Warehouse, dict[str, str]]:
    """Trips 1 (2025-01-02) and 2 (2025-01-10 10:00) of driver 7, trip 3 (2025-01-09 12:00) of
    driver 8. After the build fct_trip's watermark is 2025-01-10 10:00; with the rides lookback
    (2 days) its window starts 2025-01-08 10:00."""
    warehouse = Warehouse.empty(spark, dbt, tmp_path_factory.mktemp("rides"))
    warehouse.land(
        drivers=[driver(7, "2024-12-01 00:00", rate="0.2000"), driver(8, "2024-12-01 00:00", rate="0.2500")],
        trips=[trip(1, "2025-01-02 10:00"), trip(2, "2025-01-10 10:00", fare="30.00"),
               trip(3, "2025-01-09 12:00", driver_id=8, fare="10.00")],
    )
    warehouse.dbt_run()
    return warehouse, warehouse.checkpoint()


@pytest.fixture
def base(built_once) -> Warehouse:
    warehouse, checkpoint = built_once
    assert warehouse.watermark("fct_trip") == naive("2025-01-10 10:00")
    yield warehouse
    warehouse.restore(checkpoint)


def trips(wh: Warehouse) -> dict[int, object]:
    return {r.trip_id: r for r in wh.rows("select * from marts.fct_trip")}


def differing_keys(wh: Warehouse) -> set[str]:
    """The trips whose row a full refresh would change: the table against the live rows of the
    current-state view, every column compared (null-safe), both directions."""
    columns = wh.spark.table("marts.fct_trip").columns
    same = " and ".join(f"t.{c} <=> v.{c}" for c in columns)
    return {str(r.k) for r in wh.rows(
        "select coalesce(t.trip_id, v.trip_id) as k from marts.fct_trip as t full outer join"
        " (select * from staging.int_trips__current_state where not is_deleted) as v on t.trip_id = v.trip_id"
        f" where not ({same}) or t.trip_id is null or v.trip_id is null")}


def data_tests(wh: Warehouse) -> dict[str, tuple[str, int]]:
    """Every data test of the rides models -> (status, failures)."""
    results = wh.dbt.invoke("test", *RIDES, check=False)
    return {r.name: (r.status, r.failures) for r in results if r.resource_type == "test"}


def test_the_built_fact_holds_each_trip_with_the_commission_of_its_driver_version(base: Warehouse):
    assert {k: (str(r.trip_date), r.fare_amount, r.commission_amount) for k, r in trips(base).items()} == {
        1: ("2025-01-02", Decimal("20.00"), Decimal("4.00")),
        2: ("2025-01-10", Decimal("30.00"), Decimal("6.00")),
        3: ("2025-01-09", Decimal("10.00"), Decimal("2.50")),
    }
    assert {status for status, _ in data_tests(base).values()} == {"pass"}


def test_a_late_version_inside_the_lookback_is_loaded_and_the_watermark_does_not_go_back(base: Warehouse):
    base.land(trips=[trip(3, "2025-01-09 12:00", "2025-01-09 13:00", driver_id=8, fare="12.00")])
    base.dbt_run(*RIDES)
    assert (trips(base)[3].fare_amount, trips(base)[3].commission_amount) == (Decimal("12.00"), Decimal("3.00"))
    assert base.watermark("fct_trip") == naive("2025-01-10 10:00")


def test_a_correction_of_the_event_time_moves_the_trip_to_its_new_date(base: Warehouse):
    base.land(trips=[trip(2, "2025-01-09 09:00", "2025-01-10 11:00", fare="30.00")])
    base.dbt_run(*RIDES)
    assert str(trips(base)[2].trip_date) == "2025-01-09"
    assert base.rows("select count(*) as n from marts.fct_trip where trip_id = 2")[0].n == 1
    assert differing_keys(base) == set()


def test_a_stale_version_never_overwrites_a_newer_one(base: Warehouse):
    # inside the window, but older than the version loaded
    base.land(trips=[trip(2, "2025-01-10 10:00", "2025-01-10 09:00", fare="99.00")])
    base.dbt_run(*RIDES)
    assert trips(base)[2].fare_amount == Decimal("30.00")


def test_duplicate_versions_load_once(base: Warehouse):
    base.land(trips=[trip(4, "2025-01-10 12:00"), trip(4, "2025-01-10 12:00")])
    base.dbt_run(*RIDES)
    assert base.rows("select count(*) as n from marts.fct_trip where trip_id = 4")[0].n == 1
    assert {status for status, _ in data_tests(base).values()} == {"pass"}


def test_a_deleted_trip_leaves_the_fact(base: Warehouse):
    base.land(trips=[trip(3, "2025-01-09 12:00", "2025-01-10 12:00", driver_id=8, is_deleted=True)])
    base.dbt_run(*RIDES)
    assert set(trips(base)) == {1, 2}


def test_a_rerun_with_nothing_landed_commits_nothing(base: Warehouse):
    before = {t: base.snapshot_id(t) for t in ("marts.fct_trip", "marts.dim_driver")}
    base.dbt_run(*RIDES)
    assert {t: base.snapshot_id(t) for t in before} == before


def test_a_late_driver_version_restates_only_the_trips_started_after_it(base: Warehouse):
    # driver 7's commission drops to 10% from 2025-01-09 12:00: trip 2 (01-10) started after
    # it, trip 1 (01-02) before; trip 3 is driver 8's
    base.land(drivers=[driver(7, "2025-01-09 12:00", rate="0.1000")])
    base.dbt_run(*RIDES)
    assert sorted(r.trip_id for r in base.rows("select trip_id from scope_keys__fct_trip")) == [2]
    assert {k: r.commission_amount for k, r in trips(base).items()} == {
        1: Decimal("4.00"), 2: Decimal("3.00"), 3: Decimal("2.50")}
    assert base.rows("select count(*) as n from marts.dim_driver where driver_id = 7")[0].n == 2
    assert differing_keys(base) == set()


def test_a_trip_of_a_driver_not_yet_arrived_is_rekeyed_when_the_driver_arrives(base: Warehouse):
    base.land(trips=[trip(5, "2025-01-10 12:00", driver_id=9)])
    base.dbt_run(*RIDES)
    assert trips(base)[5].driver_key == "-1" and trips(base)[5].commission_amount is None
    # the driver's only version is old, beyond the window: the trip still awaits it, so it is
    # in scope until it arrives
    base.land(drivers=[driver(9, "2024-12-01 00:00", rate="0.5000")])
    base.dbt_run(*RIDES)
    assert trips(base)[5].driver_key != "-1" and trips(base)[5].commission_amount == Decimal("10.00")
    assert {status for status, _ in data_tests(base).values()} == {"pass"}


def test_a_null_event_time_is_quarantined_with_its_reason_not_loaded(base: Warehouse):
    base.land(trips=[trip(6, None, "2025-01-10 12:00") | {"picked_up_at": None}])
    base.dbt_run(*RIDES)
    assert 6 not in trips(base)
    quarantined = base.rows("select * from audit.audit_quarantined_rows where source_name = 'rides'")
    assert [(r.source_table, r.record_key) for r in quarantined] == [("trips", "6")], quarantined
    assert "picked_up_at" in quarantined[0].reason


def test_a_full_refresh_equals_the_sequence_of_daily_runs(base: Warehouse):
    base.land(trips=[trip(3, "2025-01-09 12:00", "2025-01-09 13:00", driver_id=8, fare="12.00"),
                     trip(4, "2025-01-10 12:00")])
    base.dbt_run(*RIDES)
    base.land(trips=[trip(2, "2025-01-09 09:00", "2025-01-10 11:00", fare="31.00")],
              drivers=[driver(7, "2025-01-09 12:00", rate="0.1000")])
    base.dbt_run(*RIDES)
    base.land(trips=[trip(4, "2025-01-10 12:00", "2025-01-10 13:00", is_deleted=True)])
    base.dbt_run(*RIDES)
    incremental = base.table("marts.fct_trip")
    base.dbt_run("--select", "fct_trip", "--full-refresh")
    assert base.table("marts.fct_trip") == incremental
    assert len(incremental) == 3


def test_a_correction_beyond_the_window_is_listed_by_the_audit_and_restated_on_its_date(base: Warehouse):
    # trip 1's fare corrected, stamped 2025-01-05: before the window start (01-08 10:00)
    base.land(trips=[trip(1, "2025-01-02 10:00", "2025-01-05 00:00", fare="25.00")])
    base.dbt_run(*RIDES)
    assert trips(base)[1].fare_amount == Decimal("20.00")  # late beyond the window: not loaded, by design
    audit = [r for r in base.rows("select * from audit.audit_unreflected_changes") if r.model_name == "fct_trip"]
    assert [(r.unique_key, r.problem, str(r.restate_date)) for r in audit] == [("1", "stale", "2025-01-02")]
    assert {"fare_amount", "commission_amount"} <= set(audit[0].differing_columns.split(", "))
    assert differing_keys(base) == {"1"}
    tests = data_tests(base)
    assert tests["no_unloaded_changes_fct_trip_"] == ("fail", 1)
    assert tests["reconcile_daily_totals_fct_trip_"] == ("fail", 1)

    output = io.StringIO()
    backfill = Backfill(base.dbt, base.spark, Console(file=output, width=200))
    plan = backfill.restate_plan(None, 7)
    assert [(str(w.start), str(w.end)) for w in plan.windows] == [("2025-01-02", "2025-01-03")]
    Console(file=output, width=200).print(backfill.restate_keys(None))
    assert "fct_trip" in output.getvalue() and "stale" in output.getvalue()
    run_id = backfill.start(plan, "late fare correction")
    assert backfill.status_of(run_id) == "published"
    assert trips(base)[1].fare_amount == Decimal("25.00")
    assert differing_keys(base) == set()
    assert {status for status, _ in data_tests(base).values()} == {"pass"}
