"""The example domains as the rule tests see them: one declared incremental fact each, and how to
land a version of one of its events. The rules (tests/python/test_rules_by_domain.py) are written
once against this and run for every domain; what is the domain's own shape (the shop's order
headers and lines, the rides' effective-dated drivers) stays in its own test module; both domains'
base events are built together once per session (conftest's `examples_built`), and the rides
example's own tests start from that build too.

An event `n` is one key of the fact: in the shop an order with one line (order n, line 1), its
amount the line's unit price (quantity 1, no discount: net_amount = the price); in rides the
trip n, its amount the fare, its driver 7 (commission 20%) but for trip 3's, driver 8 (25%: the
rides example's tests need a second driver). Every domain starts from the same three events:
1 at 2025-01-02 10:00 (20.00), 2 at 2025-01-10 10:00 (30.00), 3 at 2025-01-09 12:00 (10.00),
so the fact's watermark after the build is 2025-01-10 10:00 in every domain.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Callable

from helpers import Warehouse, customer, driver, item, order, product, trip

BASE_EVENTS = ((1, "2025-01-02 10:00", "20.00"), (2, "2025-01-10 10:00", "30.00"), (3, "2025-01-09 12:00", "10.00"))


@dataclass(frozen=True)
class Aggregate:
    """A model of the kind over the domain's models (its scope's changes name them): grouped, or
    a mart over a fact."""
    name: str
    relation: str  # its table
    current_state: str  # its current-state view: the aggregate computed from scratch
    unique_key: str

    def differing_rows(self, wh: Warehouse) -> set[str]:
        """The unique keys whose row differs from a full refresh's (the live rows of the current
        state), every column compared, null-safe, both directions: a row the table holds and the
        current state does not give (a group that lost its rows) too."""
        columns = wh.spark.table(self.relation).columns
        same = " and ".join(f"t.{c} <=> v.{c}" for c in columns)
        key = self.unique_key
        return {str(r.k) for r in wh.rows(
            f"select coalesce(t.{key}, v.{key}) as k from {self.relation} as t full outer join"
            f" (select * from {self.current_state} where not is_deleted) as v on t.{key} = v.{key}"
            f" where not ({same}) or t.{key} is null or v.{key} is null")}


def stale_aggregates(wh: Warehouse, aggregates: tuple[Aggregate, ...]) -> dict[str, set[str]]:
    """Aggregate name -> the unique keys whose row differs from a full refresh's; {} when every
    one of `aggregates` is right."""
    found = {a.name: a.differing_rows(wh) for a in aggregates}
    return {name: keys for name, keys in found.items() if keys}


@dataclass(frozen=True)
class Domain:
    name: str
    fact: str  # the declared incremental model
    relation: str  # its table
    current_state: str  # its declared current-state view
    unique_key: str  # the fact's unique key column
    event_id: str  # the fact's column holding the event's id (n)
    event_date: str  # the fact's declared event date
    amount: str  # the fact's measure an event's amount lands in
    source: str  # the source system
    event_table: str  # the source table holding the event time
    event_time: str  # its column
    dimensions: tuple[str, ...]  # the type-2 dimension tables built beside the fact
    lookback_days: int
    members: Callable[[], dict[str, list[dict]]]  # the dimension members the events refer to
    # (n, event time or None, update time or None (= event time), amount, deleted) -> landing
    version: Callable[[int, str | None, str | None, str, bool], dict[str, list[dict]]]
    # the models of the kind over the fact: each rule holds for them too (test_rules_by_domain
    # selects them and compares them with a full refresh after every run)
    aggregates: tuple[Aggregate, ...] = ()

    @property
    def select(self) -> tuple[str, ...]:
        return ("--select", f"+{self.fact}", *(f"+{d.split('.')[-1]}" for d in self.dimensions),
                *(f"+{a.name}" for a in self.aggregates))

    def stale_aggregates(self, wh: Warehouse) -> dict[str, set[str]]:
        """Aggregate name -> the unique keys whose row differs from a full refresh's; {} when
        every aggregate of the domain's rule runs is right."""
        return stale_aggregates(wh, self.aggregates)

    def event(self, n: int, event_time: str | None, updated_at: str | None = None, *, amount: str = "20.00",
              deleted: bool = False) -> dict[str, list[dict]]:
        return self.version(n, event_time, updated_at, amount, deleted)

    def base(self) -> dict[str, list[dict]]:
        landing = self.members()
        for n, at, amount in BASE_EVENTS:
            for table, rows in self.event(n, at, amount=amount).items():
                landing.setdefault(table, []).extend(rows)
        return landing

    def events(self, wh: Warehouse) -> dict[int, tuple[str, Decimal]]:
        """n -> (event date, amount) of every row of the fact."""
        return {r.n: (str(r.d), r.amount) for r in wh.rows(
            f"select {self.event_id} as n, {self.event_date} as d, {self.amount} as amount from {self.relation}")}

    def rows_of(self, wh: Warehouse, n: int) -> int:
        return wh.rows(f"select count(*) as c from {self.relation} where {self.event_id} = {int(n)}")[0].c

    def differing_events(self, wh: Warehouse) -> set[int]:
        """The events whose row a full refresh would change: the table against the live rows of
        the current-state view, every column compared (null-safe), both directions."""
        columns = wh.spark.table(self.relation).columns
        same = " and ".join(f"t.{c} <=> v.{c}" for c in columns)
        key = self.unique_key
        return {r.n for r in wh.rows(
            f"select coalesce(t.{self.event_id}, v.{self.event_id}) as n from {self.relation} as t full outer join"
            f" (select * from {self.current_state} where not is_deleted) as v on t.{key} = v.{key}"
            f" where not ({same}) or t.{key} is null or v.{key} is null")}

    def full_refresh_result(self, wh: Warehouse) -> list[tuple]:
        """What `dbt run --full-refresh` writes: the live rows of the current-state view."""
        columns = ", ".join(wh.spark.table(self.relation).columns)
        return sorted(tuple(r) for r in wh.rows(f"select {columns} from {self.current_state} where not is_deleted"))


def _shop_version(n: int, event_time: str | None, updated_at: str | None, amount: str,
                  deleted: bool) -> dict[str, list[dict]]:
    updated = updated_at or event_time
    header = order(n, event_time or updated, updated, is_deleted=deleted)
    if event_time is None:
        header["ordered_at"] = None
    return {"orders": [header], "order_items": [item(n, 1, updated, unit_price=amount, is_deleted=deleted)]}


def _rides_version(n: int, event_time: str | None, updated_at: str | None, amount: str,
                   deleted: bool) -> dict[str, list[dict]]:
    updated = updated_at or event_time
    version = trip(n, event_time or updated, updated, driver_id=8 if n == 3 else 7, fare=amount, is_deleted=deleted)
    if event_time is None:
        version["picked_up_at"] = None
    return {"trips": [version]}


DAILY_REVENUE = Aggregate("agg_daily_revenue", "marts.agg_daily_revenue", "marts.agg_daily_revenue__current_state",
                          "daily_revenue_key")
CUSTOMER_ORDERS = Aggregate("agg_customer_orders", "marts.agg_customer_orders",
                            "marts.agg_customer_orders__current_state", "customer_key")

SHOP = Domain(
    name="shop", fact="fct_order_item", relation="marts.fct_order_item",
    current_state="staging.int_order_items__current_state", unique_key="order_item_sk", event_id="order_id",
    event_date="order_date", amount="net_amount", source="shop", event_table="orders", event_time="ordered_at",
    dimensions=("marts.dim_customer", "marts.dim_product"), lookback_days=3,
    members=lambda: {"customers": [customer(1, "2024-12-01 00:00")],
                     "products": [product(1, "2024-12-01 00:00", unit_cost="4.00")]},
    version=_shop_version,
    aggregates=(DAILY_REVENUE,),
)
# every aggregate of the shop: its customer mart reads the order fact, which the shop's rule runs
# do not select (three more models in each of them); test_aggregates and the backfill tests cover it
SHOP_AGGREGATES = (DAILY_REVENUE, CUSTOMER_ORDERS)

RIDES = Domain(
    name="rides", fact="fct_trip", relation="marts.fct_trip", current_state="marts.fct_trip__current_state",
    unique_key="trip_id", event_id="trip_id", event_date="trip_date", amount="fare_amount", source="rides",
    event_table="trips", event_time="picked_up_at", dimensions=("marts.dim_driver",), lookback_days=2,
    members=lambda: {"drivers": [driver(7, "2024-12-01 00:00", rate="0.2000"),
                                 driver(8, "2024-12-01 00:00", rate="0.2500")]},
    version=_rides_version,
    aggregates=(
        Aggregate("agg_daily_city_trips", "marts.agg_daily_city_trips",
                  "marts.agg_daily_city_trips__current_state", "daily_city_key"),
    ),
)

DOMAINS = (SHOP, RIDES)

# every model of the project but the rides example's: what a module testing the shop runs
# (Warehouse.selection) after its first build of every model. The same set as selectors.yml's
# `shop_example` (a fast test keeps them equal), written as an --exclude so that it combines
# with a --select (dbt takes a --selector alone)
SHOP_ONLY = ("--exclude", "path:models/staging/rides", "path:models/intermediate/rides", "path:models/marts/rides")
# the shop's two facts alone: the daily run of a test that lands only order headers and lines
# (the dimensions have nothing new to read) or asserts on the facts only
SHOP_FACTS = ("--select", "fct_order_item", "fct_orders")
