"""The rules every declared incremental model keeps, proven once and run for every example domain
(tests/python/domains.py: the shop's order lines, the rides' trips), each from the same three
events, both domains' built once into an empty warehouse (the session's `examples_built`, put
back before each test); the fact's watermark is then 2025-01-10 10:00. Cases that land on
events of their own share one daily run (`older_versions`, `new_versions`): a run is most of a
test's cost. A domain's own shape (order headers, effective-dated drivers, unknown members) is
tested in its own module.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from decimal import Decimal

import pytest
from rich.console import Console

from domains import DOMAINS, Domain
from helpers import Warehouse, last_invocation_statements, shared_scope_views, ts
from pipeline.backfill.control import Control
from pipeline.backfill.runner import Backfill

WATERMARK = ts("2025-01-10 10:00").replace(tzinfo=None)


@pytest.fixture(scope="module", params=DOMAINS, ids=lambda d: d.name)
def domain(request) -> Domain:
    """Module-scoped: pytest runs every test of one domain, then every test of the next."""
    return request.param


@pytest.fixture
def case(domain: Domain, examples_built) -> tuple[Domain, Warehouse]:
    """The domain, and the warehouse of both domains' base events as their build left it."""
    warehouse = examples_built.fresh()
    assert warehouse.watermark(domain.fact) == WATERMARK
    return domain, warehouse


def run(d: Domain, wh: Warehouse, *args: str):
    """The domain's daily run (its fact, dimensions and aggregates); then every aggregate over
    the fact must equal its full refresh: each rule below holds for them too."""
    results = wh.dbt_run(*d.select, *args)
    assert d.stale_aggregates(wh) == {}
    return results


def data_tests(d: Domain, wh: Warehouse) -> dict[str, tuple[str, int]]:
    """Every data test of the domain's fact and dimensions and their parents -> (status, failures)."""
    return {r.name: (r.status, r.failures) for r in wh.dbt.invoke("test", *d.select, check=False)
            if r.resource_type == "test"}


def failing(tests: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    return {name: result for name, result in tests.items() if result[0] in ("fail", "error")}


def test_the_build_loads_every_event_on_its_date(case):
    d, wh = case
    assert d.events(wh) == {1: ("2025-01-02", Decimal("20.00")), 2: ("2025-01-10", Decimal("30.00")),
                            3: ("2025-01-09", Decimal("10.00"))}
    assert d.stale_aggregates(wh) == {}
    assert failing(data_tests(d, wh)) == {}


@dataclass
class DailyRun:
    """What one daily run of several cases' landings left: each case lands on an event of its
    own, so the tests below read the one run that all of them share (one run where there were
    three) and each still proves its rule alone."""
    events: dict[int, tuple[str, Decimal]]
    rows: dict[int, int]  # n -> the fact's rows of event n
    differing: set[int]
    watermark: object
    quarantined: list = field(default_factory=list)
    tests: dict[str, tuple[str, int]] = field(default_factory=dict)


def daily_run(d: Domain, wh: Warehouse, *, with_tests: bool = False) -> DailyRun:
    run(d, wh)
    return DailyRun(
        events=d.events(wh), rows={n: d.rows_of(wh, n) for n in range(1, 7)}, differing=d.differing_events(wh),
        watermark=wh.watermark(d.fact),
        quarantined=wh.rows(f"select * from audit.audit_quarantined_rows where source_name = '{d.source}'"),
        tests=data_tests(d, wh) if with_tests else {})


@pytest.fixture(scope="module")
def older_versions(domain: Domain, examples_built) -> DailyRun:
    """Versions older than the watermark (2025-01-10 10:00), inside the window: event 3's late
    version (updated 2025-01-09 13:00, after the version loaded) and event 2's stale one (updated
    2025-01-10 09:00, before the version loaded)."""
    d, wh = domain, examples_built.fresh()
    wh.land(**d.event(3, "2025-01-09 12:00", "2025-01-09 13:00", amount="12.00"))
    wh.land(**d.event(2, "2025-01-10 10:00", "2025-01-10 09:00", amount="99.00"))
    return daily_run(d, wh)


@pytest.fixture(scope="module")
def new_versions(domain: Domain, examples_built) -> DailyRun:
    """Versions newer than the watermark: event 2's event time corrected (2025-01-10 to
    2025-01-09), event 3 deleted, event 4 landed twice in one file, event 6 without an event time;
    then the domain's data tests."""
    d, wh = domain, examples_built.fresh()
    wh.land(**d.event(2, "2025-01-09 09:00", "2025-01-10 11:00", amount="30.00"))
    wh.land(**d.event(3, "2025-01-09 12:00", "2025-01-10 12:00", deleted=True))
    wh.land(**{table: rows * 2 for table, rows in d.event(4, "2025-01-10 12:00").items()})
    wh.land(**d.event(6, None, "2025-01-10 12:00"))
    return daily_run(d, wh, with_tests=True)


def test_a_late_version_inside_the_lookback_is_loaded_and_the_watermark_does_not_go_back(older_versions):
    # updated 2025-01-09 13:00: before the watermark, after its start minus the lookback
    assert older_versions.events[3] == ("2025-01-09", Decimal("12.00"))
    assert older_versions.watermark == WATERMARK


def test_a_stale_version_never_overwrites_a_newer_one(older_versions):
    # inside the window, but older than the version loaded
    assert older_versions.events[2] == ("2025-01-10", Decimal("30.00"))
    assert older_versions.differing == set()


def test_a_correction_of_the_event_time_moves_the_event_to_its_new_date_and_leaves_no_copy(new_versions):
    assert new_versions.events[2] == ("2025-01-09", Decimal("30.00"))
    assert new_versions.rows[2] == 1
    assert new_versions.differing == set()


def test_duplicate_versions_load_once(new_versions):
    assert new_versions.rows[4] == 1
    assert new_versions.tests and failing(new_versions.tests) == {}


def test_a_deleted_event_leaves_the_fact(new_versions):
    assert set(new_versions.events) == {1, 2, 4}
    assert new_versions.rows[3] == 0
    assert new_versions.differing == set()


def test_a_rerun_with_nothing_landed_commits_nothing(case):
    d, wh = case
    before = {t: wh.snapshot_id(t) for t in (d.relation, *d.dimensions)}
    run(d, wh)
    assert {t: wh.snapshot_id(t) for t in before} == before
    # and the fact's run did nothing else: no scope cached, no select analysed or staged
    mine = [s for s in last_invocation_statements() if f'"node_id": "model.backfill_safe.{d.fact}"' in s]
    assert any("nothing to merge" in s for s in mine)
    assert not [s for s in mine if "cache table" in s or "temporary view" in s or "create table" in s]


def test_a_null_event_time_is_quarantined_with_its_reason_not_loaded(domain, new_versions):
    assert 6 not in new_versions.events
    quarantined = new_versions.quarantined
    assert [(r.source_table, r.record_key) for r in quarantined] == [(domain.event_table, "6")], quarantined
    assert domain.event_time in quarantined[0].reason
    assert new_versions.watermark == ts("2025-01-10 12:00").replace(tzinfo=None)


def test_a_full_refresh_equals_the_sequence_of_daily_runs(case):
    d, wh = case
    wh.land(**d.event(3, "2025-01-09 12:00", "2025-01-09 13:00", amount="12.00"))
    wh.land(**d.event(4, "2025-01-10 12:00"))
    before = set(shared_scope_views(wh))
    run(d, wh)
    first = set(shared_scope_views(wh)) - before
    wh.land(**d.event(2, "2025-01-09 09:00", "2025-01-10 11:00", amount="31.00"))
    run(d, wh)
    # the second run cached its own shared scope and dropped the first's: a long-lived session
    # holds one run's scope caches, not every run's
    second = set(shared_scope_views(wh)) - before
    assert first and second and not first & second, (first, second)
    wh.land(**d.event(4, "2025-01-10 12:00", "2025-01-10 13:00", deleted=True))
    run(d, wh)
    incremental = wh.table(d.relation)
    assert d.events(wh) == {1: ("2025-01-02", Decimal("20.00")), 2: ("2025-01-09", Decimal("31.00")),
                            3: ("2025-01-09", Decimal("12.00"))}
    wh.dbt_run("--select", d.fact, "--full-refresh")
    assert wh.table(d.relation) == incremental


def _late_beyond_the_window(d: Domain, wh: Warehouse) -> None:
    """Event 1's amount corrected, stamped 2025-01-05: before the window's start (the watermark
    less the domain's lookback, 2 or 3 days): the daily run does not see it, by design."""
    assert d.lookback_days <= 4
    wh.land(**d.event(1, "2025-01-02 10:00", "2025-01-05 00:00", amount="25.00"))
    run(d, wh)
    assert d.events(wh)[1] == ("2025-01-02", Decimal("20.00"))


def test_a_correction_beyond_the_window_is_listed_by_the_audit_and_restated_on_its_date(case):
    d, wh = case
    _late_beyond_the_window(d, wh)
    audit = [r for r in wh.rows("select * from audit.audit_unreflected_changes") if r.model_name == d.fact]
    assert [(r.problem, str(r.restate_date)) for r in audit] == [("stale", "2025-01-02")]
    assert d.amount in audit[0].differing_columns.split(", ")
    assert d.differing_events(wh) == {1}
    tests = data_tests(d, wh)
    for check in ("no_unloaded_changes", "reconcile_daily_totals"):
        assert tests[f"{check}_{d.fact}_"] == ("warn", 1), tests  # listed, awaiting its restatement

    output = io.StringIO()
    backfill = Backfill(wh.dbt, wh.spark, Console(file=output, width=200))
    plan = backfill.restate_plan(None, 7)
    assert [(str(w.start), str(w.end)) for w in plan.windows] == [("2025-01-02", "2025-01-03")]
    Console(file=output, width=200).print(backfill.restate_keys(None))
    assert d.fact in output.getvalue() and "stale" in output.getvalue()
    assert {a.name for a in d.aggregates} <= {m.name for m in plan.models}
    # the aggregates over the fact are listed with the keys the restatement reaches in them
    reached = {r.model.name: r for r in backfill.restate_reached(None)}
    for aggregate in d.aggregates:
        assert (reached[aggregate.name].via, reached[aggregate.name].keys > 0) == ((d.fact,), True), reached
        assert re.search(rf"{aggregate.name} .* reached through {d.fact}", output.getvalue()), output.getvalue()
    run_id = backfill.start(plan, "late correction")
    assert backfill.status_of(run_id) == "published"
    assert d.events(wh)[1] == ("2025-01-02", Decimal("25.00"))
    assert d.differing_events(wh) == set()
    # the aggregates over the fact restated in the same publish
    assert d.stale_aggregates(wh) == {}
    assert failing(data_tests(d, wh)) == {}


def test_a_backfill_publishes_the_full_refresh_result_and_rolls_back_exactly(case):
    d, wh = case
    _late_beyond_the_window(d, wh)
    before = wh.table(d.relation)
    aggregates_before = {a.name: wh.table(a.relation) for a in d.aggregates}
    backfill = Backfill(wh.dbt, wh.spark, Console(file=io.StringIO()))
    run_id = backfill.start(backfill.plan("2025-01-01", "2025-01-04", d.fact, 1), "repair 01-01..01-03")
    [record] = Control(wh.spark).runs(run_id)
    assert record.status == "published" and d.fact in record.models
    assert wh.table(d.relation) == d.full_refresh_result(wh) != before
    assert wh.watermark(d.fact) == WATERMARK  # a backfill does not move the daily watermark
    # the aggregates over the fact published with it
    assert d.stale_aggregates(wh) == {}
    assert any(wh.table(a.relation) != aggregates_before[a.name] for a in d.aggregates)

    backfill.rollback(run_id)
    assert wh.table(d.relation) == before
    assert {a.name: wh.table(a.relation) for a in d.aggregates} == aggregates_before
    assert Control(wh.spark).runs(run_id)[0].status == "rolled_back"
