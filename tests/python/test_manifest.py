"""What the tools read of a model from dbt's manifest: its declaration to the framework
(config.meta.backfill_safe), its event date and the sources it reads. No Spark."""

from __future__ import annotations

import json

import pytest

from pipeline import manifest, paths
from pipeline.dbt import parse_project

pytestmark = pytest.mark.fast


@pytest.fixture(scope="module")
def parsed() -> dict:
    parse_project()
    return json.loads((paths.target_dir() / "manifest.json").read_text())


def test_a_declared_model_brings_its_event_date_current_state_measures_and_sources(parsed: dict):
    models = {m.name: m for m in manifest.incremental_models()}
    item = models["fct_order_item"]
    assert item.declared and item.event_date == "order_date" and item.unique_key == "order_item_sk"
    assert item.current_state == "staging.int_order_items__current_state"
    assert item.measures == ("quantity", "net_amount")
    # read through staging and the current-state views, not only its direct parents
    assert item.sources == ("raw.customers", "raw.order_items", "raw.orders", "raw.products")
    # the dimensions declare no event date nor current state: the tools say so rather than guess
    assert not models["dim_customer"].declared and models["dim_customer"].current_state is None
    assert models["dim_customer"].sources == ("raw.customers",)
    # a model of the kind that names none: the view of its own select, whatever it reads (the
    # trip fact reads two staging models; the ticket fact of a team's project reads one)
    trip = models["fct_trip"]
    assert trip.declared and trip.current_state == "marts.fct_trip__current_state"
    # one that groups a fact of the kind (its only input) has the view of its own select
    assert models["agg_daily_revenue"].current_state == "marts.agg_daily_revenue__current_state"
    assert models["agg_daily_city_trips"].current_state == "marts.agg_daily_city_trips__current_state"


def test_a_mart_reading_several_inputs_has_the_current_state_view_the_framework_keeps(
        parsed: dict, tmp_path, monkeypatch):
    """Its select reads a model of the kind, a view and a source, and it names no current
    state: the tools read the view of its select (maintain_current_state), and its scope key
    defaults to its unique key."""
    changed = json.loads(json.dumps(parsed))
    mart = json.loads(json.dumps(changed["nodes"]["model.backfill_safe.fct_trip"]))
    mart.update(name="trip_driver_names", unique_id="model.backfill_safe.trip_driver_names", alias="trip_driver_names")
    mart["config"]["meta"] = {"backfill_safe": {"event_date": "trip_date", "lookback": 2, "scope": {"changes": [
        {"model": "fct_trip"}, "rides.trips"]}}}
    mart["depends_on"] = {"macros": [], "nodes": ["model.backfill_safe.fct_trip", "model.backfill_safe.stg_rides__trips",
                                                  "source.backfill_safe.rides.drivers"]}
    changed["nodes"][mart["unique_id"]] = mart
    (tmp_path / "manifest.json").write_text(json.dumps(changed))
    monkeypatch.setenv("DBT_TARGET_PATH", str(tmp_path))
    models = {m.name: m for m in manifest.incremental_models()}
    assert models["trip_driver_names"].current_state == "marts.trip_driver_names__current_state"
    assert models["trip_driver_names"].upstream_models == ("fct_trip",)
    assert models["trip_driver_names"].scope_key == "trip_id"
    assert models["fct_trip"].current_state == "marts.fct_trip__current_state"


def test_only_models_of_the_framework_kind_are_pipelines(parsed: dict, tmp_path, monkeypatch):
    # a plain incremental model (not materialized backfill_safe, here without a unique_key: dbt's
    # append) is
    # none of the tools' business: no pipeline, no KeyError on its missing key
    changed = json.loads(json.dumps(parsed))
    plain = json.loads(json.dumps(changed["nodes"]["model.backfill_safe.dim_customer"]))
    plain.update(name="plain_events", unique_id="model.backfill_safe.plain_events", alias="plain_events")
    plain["config"] = {**plain["config"], "materialized": "incremental", "incremental_strategy": "append",
                       "unique_key": None, "meta": {}}
    plain["depends_on"] = {**plain["depends_on"], "macros": []}
    changed["nodes"][plain["unique_id"]] = plain
    (tmp_path / "manifest.json").write_text(json.dumps(changed))
    monkeypatch.setenv("DBT_TARGET_PATH", str(tmp_path))
    names = {m.name for m in manifest.incremental_models()}
    assert "plain_events" not in names
    assert {"fct_order_item", "fct_orders", "dim_customer", "dim_date", "fct_trip"} <= names


def test_a_declared_column_that_is_not_a_name_is_refused(parsed: dict, tmp_path, monkeypatch):
    broken = json.loads(json.dumps(parsed))
    node = broken["nodes"]["model.backfill_safe.fct_orders"]
    node["config"]["meta"]["backfill_safe"]["event_date"] = "order_date`; drop table x"
    (tmp_path / "manifest.json").write_text(json.dumps(broken))
    monkeypatch.setenv("DBT_TARGET_PATH", str(tmp_path))
    with pytest.raises(ValueError, match=r"model fct_orders: config.meta.backfill_safe.event_date = .* is not a column"):
        manifest.incremental_models()


def test_downstream_of_a_backfill_classifies_each_model_by_what_refreshes_it_and_names_the_exposures(
        parsed: dict):
    """What a publish leaves behind, from dbt's child map: a view reads the new rows, a table
    and a plain incremental model are stale (the latter needs a full refresh), a model of the
    kind outside the run needs its own backfill, and an exposure is a consumer to refresh; the
    walk goes through models (a table over a view over the fact), never through a data test."""
    changed = json.loads(json.dumps(parsed))
    template = changed["nodes"]["model.backfill_safe.fct_orders"]

    def add(name: str, materialized: str, parent: str) -> None:
        node = json.loads(json.dumps(template))
        node.update(name=name, unique_id=f"model.backfill_safe.{name}", alias=name)
        node["config"] = {"materialized": materialized, "meta": {}}
        node["depends_on"] = {"nodes": [parent], "macros": []}
        changed["nodes"][node["unique_id"]] = node
        changed["child_map"].setdefault(parent, []).append(node["unique_id"])
        changed["child_map"][node["unique_id"]] = []

    add("orders_view", "view", "model.backfill_safe.fct_orders")
    add("orders_table", "table", "model.backfill_safe.orders_view")
    add("orders_appended", "incremental", "model.backfill_safe.fct_orders")
    add("orders_ephemeral", "ephemeral", "model.backfill_safe.fct_order_item")
    found = {(d.resource_type, d.name): d for d in manifest.downstream_of(["fct_orders", "fct_order_item"], changed)}
    assert {key: (d.materialized, d.refresh, d.detail) for key, d in found.items() if key[0] == "model"} == {
        ("model", "orders_view"): ("view", "current", "reads the published tables"),
        ("model", "orders_table"): ("table", "rebuild", "dbt run --select orders_table"),
        ("model", "orders_appended"): ("incremental", "full refresh", "dbt run --full-refresh --select orders_appended"),
        ("model", "orders_ephemeral"): ("ephemeral", "current", "reads the published tables"),
        # the aggregates over the facts are of the kind: a backfill of them, not a rebuild
        ("model", "agg_daily_revenue"): ("backfill_safe", "backfill",
                                         "pipeline backfill --select agg_daily_revenue over the same dates"),
        ("model", "agg_customer_orders"): ("backfill_safe", "backfill",
                                           "pipeline backfill --select agg_customer_orders over the same dates"),
    }
    dashboard = found[("exposure", "daily_revenue_dashboard")]
    assert (dashboard.refresh, dashboard.detail) == (
        "consumer", "dashboard, Finance analytics, finance-analytics@example.com, "
                    "https://bi.example.com/dashboards/daily-revenue")
    # the models named are not their own downstream; an exposure reached through a model is
    run_models = ["fct_orders", "fct_order_item", "agg_daily_revenue", "agg_customer_orders"]
    names = {d.name for d in manifest.downstream_of(run_models, changed)}
    assert names == {"orders_view", "orders_table", "orders_appended", "orders_ephemeral", "daily_revenue_dashboard"}
    # the rides' aggregate: read by its exposure only
    assert [d.name for d in manifest.downstream_of(["agg_daily_city_trips"], changed)] == ["city_operations_report"]
