"""The audit of changes late beyond the window (audit_unreflected_changes, no_unloaded_changes):
a key is listed when the mart's row is not its current state, whatever the row's updated_at
says, and `pipeline restate` then makes both facts equal to a full refresh.

The masked miss: a row's updated_at is the greatest of its inputs' update times, so when
another input of the row changed later (inside the window) and was loaded, a late correction
of one input leaves the row's updated_at where it was: only the row's content shows the miss.
"""

from __future__ import annotations

import io
import os
import re
from decimal import Decimal
from pathlib import Path

import pytest
from rich.console import Console

from domains import SHOP_FACTS, SHOP_ONLY
from helpers import Warehouse, customer, item, order, product
from pipeline import iceberg
from pipeline.backfill.runner import Backfill
from pipeline.dbt import DbtError

# a module with a build of its own: scripts/test.sh runs it in the second process, beside the
# main one, to even the two processes' time
pytestmark = pytest.mark.beside

FACTS = {  # table -> (current-state view, unique key)
    "marts.fct_order_item": ("staging.int_order_items__current_state", "order_item_sk"),
    "marts.fct_orders": ("staging.int_orders__current_state", "order_id"),
}


@pytest.fixture(scope="module")
def built_once(spark, dbt, tmp_path_factory) -> tuple[Warehouse, dict[str, str]]:
    """Order 101 (2025-01-02) with two lines, order 102 (2025-01-10); after the build the
    watermark is 2025-01-10 10:00, so the window starts 2025-01-07 10:00."""
    warehouse = Warehouse.empty(spark, dbt, tmp_path_factory.mktemp("unreflected"), SHOP_ONLY)
    warehouse.land(
        customers=[customer(1, "2024-12-01 00:00")],
        products=[product(1, "2024-12-01 00:00", unit_cost="5.00")],
        orders=[order(101, "2025-01-02 10:00"), order(102, "2025-01-10 10:00")],
        order_items=[item(101, 1, "2025-01-02 10:00", quantity=2), item(101, 2, "2025-01-02 10:00"),
                     item(102, 1, "2025-01-10 10:00")],
    )
    warehouse.build_all()
    return warehouse, warehouse.checkpoint()


@pytest.fixture
def base(built_once) -> Warehouse:
    warehouse, checkpoint = built_once
    yield warehouse
    warehouse.restore(checkpoint)


def differing_keys(wh: Warehouse, table: str) -> set[str]:
    """The keys whose row a full refresh would change: the table against the live rows of the
    model's current-state view, every column compared (null-safe), both directions."""
    view, key = FACTS[table]
    columns = wh.spark.table(table).columns
    same = " and ".join(f"t.{c} <=> v.{c}" for c in columns)
    return {str(r.k) for r in wh.rows(
        f"select coalesce(cast(t.{key} as string), cast(v.{key} as string)) as k"
        f" from {table} as t full outer join (select * from {view} where not is_deleted) as v"
        f" on t.{key} = v.{key} where not ({same}) or t.{key} is null or v.{key} is null")}


def listed(wh: Warehouse, rows: list | None = None) -> dict[str, set[str]]:
    """The keys the audit lists, per model: of `rows` when the test read the audit already (each
    read computes every declared model's current state)."""
    found: dict[str, set[str]] = {}
    if rows is None:
        rows = wh.rows("select model_name, unique_key, problem from audit.audit_unreflected_changes")
    for r in rows:
        if r.problem != "behind":  # a model over models not run since (test_aggregates proves those)
            found.setdefault(r.model_name, set()).add(r.unique_key)
    return found


def data_tests(wh: Warehouse) -> dict[tuple[str, str], tuple[str, int]]:
    """(test, fact) -> (status, failures) of the facts' two reconciliation tests."""
    tests, facts = ("no_unloaded_changes", "reconcile_daily_totals"), ("fct_order_item", "fct_orders")
    results = wh.dbt.invoke("test", "--select", *(f"test_name:{t},{f}" for t in tests for f in facts), check=False)
    out = {}
    for r in [r for r in results if r.resource_type == "test"]:
        [found] = [(t, f) for t in tests for f in facts if r.name.startswith(f"{t}_{f}_")]
        out[found] = (r.status, r.failures)
    return out


MASKS = {
    # a sibling line of the order is deleted (2025-01-09, inside the window): the order's
    # updated_at becomes 2025-01-09, after the late correction of line 1
    "a sibling line's deletion": dict(order_items=[item(101, 2, "2025-01-09 00:00", is_deleted=True)]),
    # the order's header changes (2025-01-09): every line's updated_at becomes 2025-01-09
    "a header change": dict(orders=[order(101, "2025-01-02 10:00", "2025-01-09 00:00", status="shipped")]),
}


@pytest.mark.parametrize("mask", MASKS)
def test_a_late_correction_masked_by_a_later_change_to_another_input_is_listed_and_restated(base: Warehouse,
                                                                                            mask: str):
    base.land(**MASKS[mask])
    base.dbt_run(*SHOP_FACTS)  # only headers and lines land here
    assert differing_keys(base, "marts.fct_order_item") == differing_keys(base, "marts.fct_orders") == set()
    # line 1 of 101 corrected (quantity 2 -> 7), stamped 2025-01-05: before the window start
    base.land(order_items=[item(101, 1, "2025-01-05 00:00", quantity=7)])
    base.dbt_run(*SHOP_FACTS)
    assert base.fact_lines()[(101, 1)].quantity == 2  # late beyond the window: not loaded, by design

    line_sk = base.rows("select order_item_sk from marts.fct_order_item"
                        " where order_id = 101 and order_item_id = 1")[0].order_item_sk
    # the rows listed are exactly those a full refresh would change, on both facts
    audit = base.rows("select * from audit.audit_unreflected_changes")
    assert listed(base, audit) == {"fct_order_item": {line_sk}, "fct_orders": {"101"}}
    assert differing_keys(base, "marts.fct_order_item") == {line_sk}
    assert differing_keys(base, "marts.fct_orders") == {"101"}
    why = {r.model_name: r for r in audit}
    assert why["fct_orders"].problem == why["fct_order_item"].problem == "stale"
    # the row's updated_at does not tell: the masking change already raised it in the table
    assert why["fct_orders"].source_updated_at == why["fct_orders"].loaded_updated_at
    assert {"total_quantity", "net_amount"} <= set(why["fct_orders"].differing_columns.split(", "))
    assert {"quantity", "net_amount"} <= set(why["fct_order_item"].differing_columns.split(", "))
    assert str(why["fct_orders"].restate_date) == "2025-01-02"

    # listed and awaiting its restatement: a warning, so a build goes on downstream
    assert data_tests(base) == {
        ("no_unloaded_changes", "fct_order_item"): ("warn", 1),
        ("no_unloaded_changes", "fct_orders"): ("warn", 1),
        ("reconcile_daily_totals", "fct_order_item"): ("warn", 1),  # 2025-01-02
        ("reconcile_daily_totals", "fct_orders"): ("warn", 1),
    }

    output = io.StringIO()
    backfill = Backfill(base.dbt, base.spark, Console(file=output, width=200))
    plan = backfill.restate_plan(None, 7)
    assert [(str(w.start), str(w.end)) for w in plan.windows] == [("2025-01-02", "2025-01-03")]
    Console(file=output, width=200).print(backfill.restate_keys(None))
    printed = output.getvalue()
    assert "fct_orders" in printed and "101" in printed and line_sk in printed and "stale" in printed

    run_id = backfill.start(plan, f"late correction masked by {mask}")
    assert backfill.status_of(run_id) == "published"
    for table in FACTS:
        assert differing_keys(base, table) == set(), table
    assert base.fact_lines()[(101, 1)].quantity == 7
    assert base.rows("select total_quantity from marts.fct_orders where order_id = 101")[0].total_quantity == (
        7 if mask == "a sibling line's deletion" else 8)
    assert listed(base) == {}
    assert {status for status, _ in data_tests(base).values()} == {"pass"}


def test_a_change_inside_the_window_not_yet_loaded_is_left_to_the_daily_run(base: Warehouse):
    # a late correction of line 1 (before the window) and, landed with it, a header change
    # inside the window: the next daily run recomputes the whole order, the late line too
    base.land(order_items=[item(101, 1, "2025-01-05 00:00", quantity=7)],
              orders=[order(101, "2025-01-02 10:00", "2025-01-09 00:00", status="shipped")])
    assert differing_keys(base, "marts.fct_orders") == {"101"}
    assert listed(base) == {}
    base.dbt_run(*SHOP_FACTS)
    assert base.fact_lines()[(101, 1)].quantity == 7
    assert base.rows("select net_amount from marts.fct_orders where order_id = 101")[0].net_amount == Decimal("80.00")
    assert differing_keys(base, "marts.fct_orders") == set() and listed(base) == {}


def test_a_late_correction_landed_but_not_yet_run_is_listed_before_the_run(base: Warehouse):
    # nothing else changes the order: the next daily run will not pick it up either
    base.land(order_items=[item(101, 1, "2025-01-05 00:00", quantity=7)])
    line_sk = base.rows("select order_item_sk from marts.fct_order_item"
                        " where order_id = 101 and order_item_id = 1")[0].order_item_sk
    assert listed(base) == {"fct_order_item": {line_sk}, "fct_orders": {"101"}}


def test_a_lookback_domain_the_var_does_not_name_is_an_error_not_a_default(base: Warehouse):
    with pytest.raises(DbtError) as raised:
        base.dbt.invoke("compile", "--select", "fct_orders",
                        "--vars", "{lookback_days: {sale: 3, customers: 3, products: 3}}")
    message = str(raised.value)
    assert "lookback domain 'sales' is not in var 'lookback_days' (domains: customers, products, sale)" in message
    assert "fct_orders" in message


@pytest.mark.parametrize("window, error", [
    ("{backfill_start: '2025-02-30', backfill_end: '2025-03-02'}",
     "var 'backfill_start' must be a date YYYY-MM-DD; got: 2025-02-30"),
    ("{backfill_start: 2025-03-01}", "var 'backfill_end' must be a date YYYY-MM-DD (both backfill vars are needed)"),
    ("{backfill_start: 2025-03-02, backfill_end: 2025-03-01}", "backfill_start must be before backfill_end"),
    # the gate's dates (the runner passes them to the data tests of a backfill's gate)
    ("{backfill_gate_windows: [['2025-03-01']]}", "var backfill_gate_windows: ['2025-03-01'] is not a [start, end]"),
    ("{backfill_gate_windows: [['2025-03-01', 'tomorrow']]}",
     "var backfill_gate_windows: 'tomorrow' is not a YYYY-MM-DD date"),
])
def test_a_backfill_window_given_by_hand_is_refused_naming_the_var(base: Warehouse, window: str, error: str):
    """`dbt run --vars` with a backfill window: a day that does not exist, one var of the two, or
    an empty window is a compile error naming the var, before any SQL of the model runs; and so
    is a gate's window that is not a pair of dates (compiled with the model's data tests)."""
    with pytest.raises(DbtError) as raised:
        base.dbt.invoke("compile", "--select", "fct_orders", "--vars", window)
    assert error in str(raised.value)


def test_a_declared_model_without_its_table_or_missing_from_the_audit_is_named_and_restate_refuses_it(
        base: Warehouse):
    from pipeline.backfill.plan import BackfillRefused

    def audit() -> list[tuple[str, str]]:
        base.spark.sql("refresh table audit.audit_unreflected_changes")  # replaced by dbt since read
        return sorted((r.model_name, r.problem) for r in base.rows("select * from audit.audit_unreflected_changes"))

    def audited() -> str:
        return ",".join(sorted(iceberg.audited_models(base.spark, "audit.audit_unreflected_changes")))

    backfill = Backfill(base.dbt, base.spark, Console(file=io.StringIO(), width=200))
    assert audit() == [] and backfill.restate_plan(None, 7) is None
    # the view was written before a new declared model existed: its parts list the models they
    # cover, and restate refuses a declared model they do not cover instead of finding nothing
    covered = audited()
    assert covered == "agg_customer_orders,agg_daily_city_trips,agg_daily_revenue,fct_order_item,fct_orders,fct_trip"
    [part] = base.rows("show tblproperties audit.audit_unreflected_changes ('backfill_safe.audit_parts')")[0].value.split(",")
    base.spark.sql(f"alter view {part} set tblproperties"
                   f" ('backfill_safe.audited_models' = '{covered.replace(',fct_trip', '')}')")
    with pytest.raises(BackfillRefused, match=r"does not cover fct_trip yet \(it covers: agg_customer_orders, "
                                              r"agg_daily_city_trips, agg_daily_revenue, fct_order_item, fct_orders\)"):
        backfill.restate_plan(None, 7)
    assert backfill.restate_plan("fct_orders", 7) is None
    # a declared model whose table is gone (or not built yet): the next run of a declared model
    # rewrites the view over every declared model, and the missing one is a row, not left out
    base.spark.sql("alter table marts.fct_trip rename to marts.fct_trip_away")
    try:
        base.dbt_run("--select", "int_orders__current_state")
        # and the aggregate over it, whose current state reads it
        assert audit() == [("agg_daily_city_trips", "not built"), ("fct_trip", "not built")]
        assert audited() == covered
        with pytest.raises(BackfillRefused, match=r"fct_trip: declared but not built \(missing: marts.fct_trip\).*"
                                                  r"dbt build --select \+agg_daily_city_trips \+fct_trip"):
            backfill.restate_plan(None, 7)
        assert backfill.restate_plan("fct_orders", 7) is None
    finally:
        base.spark.sql("alter table marts.fct_trip_away rename to marts.fct_trip")
    base.dbt_run("--select", "int_orders__current_state")  # a declared model's current state: rewritten
    assert audit() == []
    # a table its current state cannot be compared with (a schema change half done): one row
    # naming the column, not a failure of every other model's run at its end
    base.spark.sql("alter table marts.fct_order_item add column unexpected string")
    try:
        base.dbt_run("--select", "int_orders__current_state")
        assert audit() == [("fct_order_item", "not auditable")]
        with pytest.raises(BackfillRefused, match=r"fct_order_item: declared but not auditable \(columns missing: "
                                                  r"staging.int_order_items__current_state.unexpected\)"):
            backfill.restate_plan(None, 7)
    finally:
        base.spark.sql("alter table marts.fct_order_item drop column unexpected")
    base.dbt_run("--select", "int_orders__current_state")
    assert audit() == []


DECLARATION = {"event_date": "order_date", "lookback": "sales", "current_state": "int_orders__current_state"}
SCOPE = {"key": "order_id", "event_time": "shop.orders.ordered_at", "changes": ["shop.orders"]}
BROKEN_DECLARATIONS = {
    "no lookback": ({k: v for k, v in DECLARATION.items() if k != "lookback"}, "'lookback' is missing"),
    "unknown key": ({**DECLARATION, "lookback_days": 3}, "unknown key 'lookback_days'"),
    "lookback domain the var does not name": ({**DECLARATION, "lookback": "sale"},
                                              "lookback domain 'sale' is not in var 'lookback_days' (domains: "),
    "lookback of negative days": ({**DECLARATION, "lookback": -2},
                                  "lookback: a whole number of days >= 0 or a domain of var 'lookback_days'; got -2"),
    "restatement window shorter than the lookback": (
        {**DECLARATION, "restatement_window": 2},
        "restatement_window: the restatement window (2 days) is shorter than the lookback (3 days)"),
    "restatement window of a key the var lacks": (
        {**DECLARATION, "restatement_window": "finance"},
        "restatement_window 'finance' is not in var 'restatement_window_days' (keys: default)"),
    "no such current state": ({**DECLARATION, "current_state": "int_order__current_state"},
                              "current_state 'int_order__current_state' is no model of the project"),
    "undocumented event date": ({**DECLARATION, "event_date": "ordered_date"},
                                "column 'ordered_date' is not among the model's documented columns"),
    "scope key a source lacks": (
        {**DECLARATION, "scope": {**SCOPE, "changes": ["shop.orders", "shop.customers"]}},
        ".scope.changes: source shop.customers has no column 'order_id'"),
    "a direct source's own key column it lacks": (
        {**DECLARATION, "scope": {**SCOPE, "changes": [{"source": "shop.orders", "key": "id"}]}},
        ".scope.changes: source shop.orders has no column 'id'"),
    "a direct source's mapping without its key": (
        {**DECLARATION, "scope": {**SCOPE, "changes": [{"source": "shop.orders"}]}},
        ".scope.changes: 'key' is missing in "),
    "a direct source's key that is no column name": (
        {**DECLARATION, "scope": {**SCOPE, "changes": [{"source": "shop.orders", "key": "order_id; drop"}]}},
        ".scope.changes: key: the source's column holding the model's key 'order_id', one column name; "
        "got order_id; drop"),
    "a direct source's mapping with another key": (
        {**DECLARATION, "scope": {**SCOPE, "changes": [{"source": "shop.orders", "key": "order_id", "named_by": "x"}]}},
        ".scope.changes: unknown key 'named_by' (keys: source, key for a direct source; "),
    "scope source not landed": (
        {**DECLARATION, "scope": {**SCOPE, "changes": ["shop.orders", "shop.returns"]}},
        ".scope.changes: 'shop.returns' is no landed source table (landed: rides.drivers, rides.trips, shop.customers"),
    "event time not a direct change": (
        {**DECLARATION, "scope": {**SCOPE, "event_time": "shop.order_items.updated_at"}},
        ".scope.event_time: 'shop.order_items' is not among its direct changes ['shop.orders']"),
    "change through a column its direct source lacks": (
        {**DECLARATION, "scope": {**SCOPE, "changes": [
            "shop.orders", {"source": "shop.products", "through": "shop.orders", "on": "product_id"}]}},
        ".scope.changes.through: source shop.orders has no column 'product_id'"),
    "effective_dated as text": (
        {**DECLARATION, "scope": {**SCOPE, "changes": ["shop.orders", "shop.order_items", {
            "source": "shop.products", "through": "shop.order_items", "on": "product_id",
            "effective_dated": "true"}]}},
        ".scope.changes: effective_dated must be true or false (a boolean); got 'true'"),
    "scope key undocumented": (
        {**DECLARATION, "scope": {**SCOPE, "key": "customer_id", "changes": ["shop.orders"]}},
        ".scope: key 'customer_id' is not among the model's documented columns"),
    "awaiting neither columns nor flags": (
        {**DECLARATION, "scope": {**SCOPE, "awaiting": ["customer_key", {"column": "awaits_product"}]}},
        ".scope.awaiting: a list of the model's columns, each a dimension key"),
}

# a model whose changes are models of the kind (an aggregate, a mart over a fact): no lookback
OVER_MODELS = {"event_date": "order_date", "current_state": "int_orders__current_state"}
BROKEN_MODEL_CHANGES = {
    "an upstream model not of the kind": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "int_orders__current_state"}]}}, {},
        ".scope.changes: model 'int_orders__current_state' is not of the framework's kind (it is materialized "
        "'view'): only a model materialized 'backfill_safe' records what its runs change"),
    "a tie column the upstream lacks": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders", "key": "order_key"}]}}, {},
        ".scope.changes: model 'fct_orders' has no column 'order_key' (its documented columns: order_id, "),
    "the scope key the upstream lacks": (
        {**OVER_MODELS, "scope": {"key": "order_date", "changes": [{"model": "dim_customer"}]}}, {},
        ".scope.changes: model 'dim_customer' has no column 'order_date' (its documented columns: customer_key, "),
    "no such model": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "fct_order"}]}}, {},
        ".scope.changes: 'fct_order' is no model of the project"),
    "an upstream the select does not read": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders"}]}}, {},
        ".scope.changes: model 'fct_orders' is not read by this model's select (ref it, directly or through "
        "the models it reads)"),
    "a cycle": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders"}]}},
        {"unique_id": "model.backfill_safe.int_orders__current_state"},
        ".scope.changes: a cycle: model 'fct_orders' reads this model"),
    "models and sources without the sources' lookback": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders"}, "shop.orders"]}}, {},
        ": 'lookback' is missing"),
    "an effective-dated source beside models": (
        {**OVER_MODELS, "lookback": "sales", "scope": {"changes": [
            {"model": "fct_orders"}, "shop.order_items",
            {"source": "shop.products", "through": "shop.order_items", "on": "product_id", "effective_dated": True}]}},
        {}, ".scope.changes: shop.products is effective_dated, which needs the scope's event_time: a scope whose "
            "changes name models of the kind has none"),
    "a source beside models reached through one that is not direct": (
        {**OVER_MODELS, "lookback": "sales", "scope": {"changes": [
            {"model": "fct_orders"}, {"source": "shop.customers", "through": "shop.orders", "on": "customer_id"}]}},
        {}, ".scope.changes.through: 'shop.orders' is not among its direct changes []"),
    "awaiting rows, which its runs would not keep": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders"}], "awaiting": ["customer_key"]}}, {},
        ".scope.awaiting: a scope whose changes name models of the kind keeps no awaiting rows"),
    "a lookback": (
        {**OVER_MODELS, "lookback": "sales", "scope": {"changes": [{"model": "fct_orders"}]}}, {},
        ": lookback: a model whose changes are models of the kind has no lookback"),
    "an event time": (
        {**OVER_MODELS, "scope": {"event_time": "shop.orders.ordered_at", "changes": [{"model": "fct_orders"}]}},
        {}, ".scope.event_time: a scope whose changes name models of the kind has no event_time"),
    "an input of the kind the scope does not tie": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders"}]}},
        {"depends_on": {"macros": [], "nodes": ["model.backfill_safe.fct_orders", "model.backfill_safe.dim_customer"]}},
        ".scope: the select reads model 'dim_customer' (materialized 'backfill_safe'), which no entry ties to the "
        "key 'order_id': a change to it would be missed. Add {model: dim_customer, key: <its column holding the "
        "key>} to changes, or add it to static"),
    "a landed source the scope does not tie, read through a view": (
        {**OVER_MODELS, "lookback": "sales", "scope": {"changes": [{"model": "fct_orders"}, "shop.orders"]}},
        {"depends_on": {"macros": [], "nodes": ["model.backfill_safe.fct_orders",
                                                "model.backfill_safe.stg_shop__customers"]}},
        ".scope: the select reads landed source 'shop.customers', which no entry ties to the key 'order_id': a "
        "change to it would be missed. Add it to changes"),
    "static not a list": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders"}], "static": "dim_customer"}}, {},
        ".scope.static: a list of the inputs whose changes put no key in scope, each a model's name or "
        "'<source>.<table>'; got dim_customer"),
    "another key in a model's entry": (
        {**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders", "on": "order_id"}]}}, {},
        ".scope.changes: unknown key 'on' (keys: model, key for a model of the kind)"),
}

DIMENSION = {"lookback": 3, "dimension": {"type": 2, "member_key": "member_id"}}

BROKEN_DIMENSIONS = {
    "type 3": ({**DIMENSION, "dimension": {"type": 3, "member_key": "member_id"}},
               ".dimension.type: 1 (overwritten) or 2 (versions with validity intervals); got 3"),
    "undocumented member key": ({**DIMENSION, "dimension": {"type": 2, "member_key": "customer_id"}},
                                ".dimension: column 'customer_id' is not among the model's documented columns"),
    "a fact's key": ({**DIMENSION, "event_date": "valid_from"}, "unknown key 'event_date' for a dimension"),
    "an unknown member the framework writes": (
        {**DIMENSION, "dimension": {**DIMENSION["dimension"], "unknown_member": {"is_current": False}}},
        ".dimension.unknown_member: 'is_current' is the framework's to write"),
    "no lookback": ({"dimension": DIMENSION["dimension"]}, "'lookback' is missing"),
}

BROKEN_REFERENCES = {
    "a fact's key": ({"reference": True, "lookback": 3}, "unknown key 'lookback' for a reference table"),
    "not true": ({"reference": "yes"}, ".reference: true, or no reference key; got yes"),
    "undocumented unique key": ({"reference": True}, ": column 'order_id' (the unique key) is not among the "
                                                     "model's documented columns ['order_date']"),
}


def _example_node(block: dict, materialized: str = "backfill_safe", old_way: bool = False) -> dict:
    """A model node of the framework's kind as dbt's graph holds it (or, `old_way`, one whose
    select ends with merge_source(), refused)."""
    return {"name": "fct_example", "unique_id": "model.backfill_safe.fct_example", "original_file_path": "models/x.sql",
            "database": None, "schema": "marts", "alias": "fct_example",
            "config": {"unique_key": "order_id", "materialized": materialized,
                       "incremental_strategy": None, "file_format": "iceberg", "meta": {"backfill_safe": block}},
            "depends_on": {"macros": ["macro.backfill_safe.merge_source"] if old_way else [], "nodes": []},
            "columns": {"order_id": {}, "order_date": {}}}


def _declaration_error(base: Warehouse, node: dict) -> str:
    """The compile error of macro declared_model on `node`; run-operation writes it to dbt's log
    only (the invocation fails)."""
    import json

    log = Path(os.environ["PIPELINE_STATE_DIR"]) / "logs" / "dbt.log"
    start = log.stat().st_size if log.exists() else 0
    with pytest.raises(DbtError):
        base.dbt.invoke("run-operation", "declared_model", "--args", json.dumps({"node": node}))
    with log.open() as handle:
        handle.seek(start if log.stat().st_size >= start else 0)  # dbt rotates its log at 10 MB
        return handle.read()


@pytest.mark.parametrize("case", BROKEN_DECLARATIONS)
def test_an_inconsistent_declaration_is_a_compile_error_naming_the_model_and_the_key(base: Warehouse, case: str):
    block, message = BROKEN_DECLARATIONS[case]
    error = _declaration_error(base, _example_node(block))
    assert "model fct_example (models/x.sql), config.meta.backfill_safe" in error
    assert message in error


@pytest.mark.parametrize("case", BROKEN_MODEL_CHANGES)
def test_a_broken_declaration_of_changes_from_models_is_a_compile_error_naming_the_model_and_the_key(
        base: Warehouse, case: str):
    """An upstream that is not of the kind, a tie column it lacks, an upstream the select does not
    read, a cycle: refused before anything runs (declared_model, in prepare_framework_run)."""
    block, node_fields, message = BROKEN_MODEL_CHANGES[case]
    node = {**_example_node(block), **node_fields}
    error = _declaration_error(base, node)
    assert "model fct_example (models/x.sql), config.meta.backfill_safe" in error
    assert message in error


def test_a_declaration_of_changes_from_models_that_the_select_reads_is_accepted(base: Warehouse):
    """Models alone (and an input declared static); and models and landed sources mixed in one
    scope, with the sources' lookback."""
    import json

    node = _example_node({**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders"}]}})
    node["depends_on"]["nodes"] = ["model.backfill_safe.fct_orders"]
    base.dbt.invoke("run-operation", "declared_model", "--args", json.dumps({"node": node}))
    # an input whose changes must put no key in scope, declared so
    node = _example_node({**OVER_MODELS, "scope": {"changes": [{"model": "fct_orders"}], "static": ["dim_customer"]}})
    node["depends_on"]["nodes"] = ["model.backfill_safe.fct_orders", "model.backfill_safe.dim_customer"]
    base.dbt.invoke("run-operation", "declared_model", "--args", json.dumps({"node": node}))
    node = _example_node({**OVER_MODELS, "lookback": "sales", "scope": {"key": "order_id", "changes": [
        {"model": "fct_orders"}, "shop.orders", {"source": "shop.customers", "through": "shop.orders",
                                                 "on": "customer_id"}]}})
    node["depends_on"]["nodes"] = ["model.backfill_safe.fct_orders"]
    base.dbt.invoke("run-operation", "declared_model", "--args", json.dumps({"node": node}))


@pytest.mark.parametrize("case", sorted(BROKEN_DIMENSIONS))
def test_a_broken_dimension_declaration_is_a_compile_error_naming_the_model_and_the_key(base: Warehouse, case: str):
    block, message = BROKEN_DIMENSIONS[case]
    node = _example_node(block)
    node.update(columns={c: {} for c in ("member_key", "member_id", "member_name", "is_deleted", "valid_from",
                                         "valid_to", "is_current", "updated_at")})
    node["config"]["unique_key"] = "member_key"
    error = _declaration_error(base, node)
    assert "model fct_example (models/x.sql), config.meta.backfill_safe" in error
    assert message in error


@pytest.mark.parametrize("case", sorted(BROKEN_REFERENCES))
def test_a_broken_reference_table_declaration_is_a_compile_error_naming_the_model_and_the_key(base: Warehouse,
                                                                                              case: str):
    block, message = BROKEN_REFERENCES[case]
    node = _example_node(block)
    if case == "undocumented unique key":
        node["columns"] = {"order_date": {}}
    error = _declaration_error(base, node)
    assert "model fct_example (models/x.sql), config.meta.backfill_safe" in error
    assert message in error


def test_a_model_of_the_kind_reading_several_inputs_needs_no_current_state_unless_it_scopes_itself(
        base: Warehouse):
    """Named none, the current state is the view of the model's own select the framework keeps
    (maintain_current_state), whatever the select reads. A select that restricts itself to the
    run's keys (scope_keys()) cannot be that view: refused, naming the key, even when it reads
    one model (that model is not taken for its current state); declared, accepted."""
    import json

    block = {k: v for k, v in DECLARATION.items() if k != "current_state"}
    node = _example_node(block)
    node["depends_on"]["nodes"] = ["model.backfill_safe.stg_shop__orders", "model.backfill_safe.stg_shop__customers"]
    base.dbt.invoke("run-operation", "declared_model", "--args", json.dumps({"node": node}))
    node["raw_code"] = "select * from ({{ orders_current_state(scope_keys()) }}) as order_state"
    error = _declaration_error(base, node)
    assert ("model fct_example (models/x.sql), config.meta.backfill_safe: 'current_state' is missing: a select "
            "that restricts itself to a run's keys (scope_keys()) names the model that holds every key's row") in error
    node["depends_on"]["nodes"] = ["model.backfill_safe.int_orders__current_state"]
    assert "'current_state' is missing" in _declaration_error(base, node)  # one read: still refused
    node["config"]["meta"]["backfill_safe"]["current_state"] = "int_orders__current_state"
    base.dbt.invoke("run-operation", "declared_model", "--args", json.dumps({"node": node}))


def test_an_event_date_documented_as_a_timestamp_is_refused_when_declared(base: Warehouse):
    """A team's event date that is a timestamp is refused from its yml, before anything runs
    (it failed only `pipeline restate`, after 137 s, in a team's project): naming the column and
    the fix. Documented as a date, the same declaration is accepted."""
    import json

    node = _example_node(dict(DECLARATION))
    node["columns"]["order_date"] = {"name": "order_date", "data_type": "timestamp"}
    error = _declaration_error(base, node)
    assert ("model fct_example (models/x.sql), config.meta.backfill_safe: event_date 'order_date' is documented "
            "as timestamp; it must be a DATE") in error
    assert "cast(... as date) as order_date, and document its data_type: date" in error
    node["columns"]["order_date"]["data_type"] = "DATE"
    base.dbt.invoke("run-operation", "declared_model", "--args", json.dumps({"node": node}))


@pytest.mark.parametrize("materialized", ["incremental", "backfill_safe"])
def test_a_model_written_the_old_way_is_refused_naming_the_guide(base: Warehouse, materialized: str):
    """A select that ends with merge_source() (the kind before its materialization) is refused
    before anything runs, whatever it is materialized as, naming the model and the guide."""
    error = _declaration_error(base, _example_node(dict(DECLARATION), materialized=materialized, old_way=True))
    assert ("model fct_example (models/x.sql): its select ends with merge_source(), the old way of the "
            "framework's kind: set materialized='backfill_safe'") in error
    assert "(docs/guides/add-a-source-and-a-model.md)" in error


def test_a_broken_declaration_stops_the_run_before_any_model_runs(base: Warehouse):
    """The whole declaration of every selected model is checked on-run-start (declared_model in
    prepare_framework_run): a lookback domain the vars no longer name stops the run with the
    model and the key named, before its upstream view or any model runs, instead of after the
    models before it built."""
    import json

    before = base.snapshot_id("marts.fct_orders")
    base.spark.sql("drop view staging.stg_shop__orders")  # a run that reached it would create it
    try:
        # dbt stops the invocation at its on-run-start hook: an exception, no node runs
        with pytest.raises(DbtError, match=re.escape(
                "model fct_orders (models/marts/fct_orders.sql), config.meta.backfill_safe: lookback domain "
                "'sales' is not in var 'lookback_days' (domains: customers, products)")):
            base.dbt.invoke("run", "--select", "stg_shop__orders", "fct_orders", "--vars",
                            json.dumps({"lookback_days": {"customers": 3, "products": 3}}), check=False)
        assert not base.spark.catalog.tableExists("staging.stg_shop__orders")
        assert base.snapshot_id("marts.fct_orders") == before
    finally:
        base.dbt_run("--select", "stg_shop__orders")  # put back for the module's other tests
