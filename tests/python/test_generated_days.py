"""Nine days of generated source data, built once for the module and read by two tests.

The build: the first five days (2025-01-01 .. 01-05) landed and built from scratch, then each
of the four next days landed and run incrementally, as the daily job does, with dbt `--threads 4`
(as most teams' profiles set it: independent models run at once on the one Spark session, and the
facts of one lookback domain make their shared scope caches side by side). Those four daily
runs exercise the rules together on the generator's mix (late corrections up to 30 days back,
late-arriving orders, header changes, ordered_at moves, out-of-order versions, duplicates,
deletions, product and customer changes).
1. The daily incrementals equal a full refresh, and the data tests pass on them.
2. Volume alerts (`volume_within_band`, rows per order date against the trailing dates) are
   quiet on those nine normal days, and fire on an injected spike and drop. This test changes
   the landed data, so it runs after the first (file order).
(`run_delta_within_band`, on control.run_records, is in test_volume_alerts.py.)
"""

from __future__ import annotations

import pytest

from domains import SHOP_FACTS, SHOP_ONLY
from helpers import SHOP_MARTS, Warehouse
from sample.generate import GeneratorConfig, generate
from pipeline.land import land

# nine generated days built twice (incremental, then a full refresh): the extended tier
pytestmark = pytest.mark.extended

MARTS = tuple(f"marts.{name}" for name in SHOP_MARTS)
DAYS = GeneratorConfig(days=9, orders_per_day=30, seed=21)
FIRST_BUILD_DAYS = 5
ERROR = ("--vars", '{"volume_alert_severity": "error"}')
THREADS = ("--threads", "4")


@pytest.fixture(scope="module")
def generated(spark, dbt, tmp_path_factory) -> Warehouse:
    files = tmp_path_factory.mktemp("generated")
    warehouse = Warehouse.empty(spark, dbt, files, SHOP_ONLY)
    days = generate(DAYS, files / "landing")
    for folder in days[:FIRST_BUILD_DAYS]:
        land(spark, sorted(folder.iterdir()))
    warehouse.build_all()
    for folder in days[FIRST_BUILD_DAYS:]:
        land(spark, sorted(folder.iterdir()))
        warehouse.dbt_run(*THREADS)
    return warehouse


def test_daily_incrementals_over_generated_days_equal_a_full_refresh(generated: Warehouse):
    results = generated.dbt.invoke("test")
    assert {r.status for r in results if r.resource_type == "test"} == {"pass"}
    incremental = {t: generated.table(t) for t in MARTS}
    assert len(incremental["marts.fct_order_item"]) > 500

    generated.dbt_run("--full-refresh")
    full_refresh = {t: generated.table(t) for t in MARTS}
    for table in MARTS:
        assert incremental[table] == full_refresh[table], table


def _volume_tests(wh: Warehouse, name: str) -> dict[str, tuple[str, int]]:
    """Status and failing rows of each test named `name`, with severity error."""
    results = wh.dbt.invoke("test", "--select", f"test_name:{name}", *ERROR, check=False)
    return {r.name: (r.status, r.failures) for r in results if r.resource_type == "test"}


def _by_source(results: dict[str, tuple[str, int]]) -> dict[str, list[str]]:
    """The statuses of the shop's facts' tests and of the rides example's fct_trip."""
    found: dict[str, list[str]] = {}
    for name, (status, _) in sorted(results.items()):
        found.setdefault("rides" if "fct_trip" in name else "shop", []).append(status)
    return found


def test_volume_within_band_is_quiet_on_normal_days_and_fires_on_a_spike_and_a_drop(generated: Warehouse):
    warehouse = generated
    quiet = _volume_tests(warehouse, "volume_within_band")
    # one per declared fact: the shop's two and the rides example's (no rides in the generated days)
    assert sorted(quiet.values()) == [("pass", 0)] * 3, quiet

    # a spike: a tenth day with five times the usual orders (copies of day 9's, new ids); the
    # daily run of the facts loads it (their dimensions get no new rows from it)
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
    warehouse.dbt_run(*SHOP_FACTS)
    spike = _volume_tests(warehouse, "volume_within_band")
    assert _by_source(spike) == {"shop": ["fail", "fail"], "rides": ["pass"]}, spike

    # the default severity is warn: the same finding does not fail a build
    warned = [r for r in warehouse.dbt.invoke("test", "--select", "test_name:volume_within_band", check=False)
              if r.resource_type == "test"]
    assert {r.status for r in warned if "fct_trip" not in r.name} == {"warn"}

    # a drop: the spike day deleted down to a handful of orders
    warehouse.spark.sql("insert into raw.orders select order_id, customer_id, channel, status, ordered_at,"
                        " updated_at + interval 1 minute, true, current_timestamp(), 'drop' from raw.orders"
                        " where cast(ordered_at as date) = date'2025-01-10' and order_id % 50 <> 0")
    warehouse.dbt_run(*SHOP_FACTS)
    drop = _volume_tests(warehouse, "volume_within_band")
    assert _by_source(drop) == {"shop": ["fail", "fail"], "rides": ["pass"]}, drop
