"""What is the rides example's own shape: an effective-dated driver dimension reached from one
event table (a driver version reaches only the trips picked up after it; a trip whose driver has
not arrived waits on the unknown member and is re-keyed when it arrives). The rules every declared
model keeps run for rides and the shop alike in test_rules_by_domain.py. Each test starts from the
same built warehouse, the one test_rules_by_domain's tests start from."""

from __future__ import annotations

from decimal import Decimal

import pytest

from domains import RIDES as RIDES_DOMAIN
from helpers import Warehouse, driver, scope_relations, trip, ts

RIDES = RIDES_DOMAIN.select


def naive(text: str):
    return ts(text).replace(tzinfo=None)


@pytest.fixture
def base(examples_built) -> Warehouse:
    """The rides' base events (domains.py, built beside the shop's by the session's
    `examples_built`, put back before each test): trips 1 (2025-01-02 10:00, 20.00) and 2
    (2025-01-10 10:00, 30.00) of driver 7 (commission 20%), trip 3 (2025-01-09 12:00, 10.00) of
    driver 8 (25%). After the build fct_trip's watermark is 2025-01-10 10:00; with its 2-day
    lookback its window starts 2025-01-08 10:00."""
    warehouse = examples_built.fresh()
    assert warehouse.watermark("fct_trip") == naive("2025-01-10 10:00")
    return warehouse


def trips(wh: Warehouse) -> dict[int, object]:
    return {r.trip_id: r for r in wh.rows("select * from marts.fct_trip")}


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


def test_a_late_driver_version_restates_only_the_trips_started_after_it(base: Warehouse):
    # driver 7's commission drops to 10% from 2025-01-09 12:00: trip 2 (01-10) started after
    # it, trip 1 (01-02) before; trip 3 is driver 8's
    base.land(drivers=[driver(7, "2025-01-09 12:00", rate="0.1000")])
    base.dbt_run(*RIDES)
    assert sorted(r.trip_id for r in base.rows(f"select trip_id from {scope_relations('fct_trip')['keys']}")) == [2]
    assert {k: r.commission_amount for k, r in trips(base).items()} == {
        1: Decimal("4.00"), 2: Decimal("3.00"), 3: Decimal("2.50")}
    assert base.rows("select count(*) as n from marts.dim_driver where driver_id = 7")[0].n == 2
    assert RIDES_DOMAIN.differing_events(base) == set()


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


