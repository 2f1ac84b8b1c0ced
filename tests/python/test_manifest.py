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
    # a model of the kind whose select reads one model: that model is its current state
    trip = models["fct_trip"]
    assert trip.declared and trip.current_state == "staging.int_trips__current_state"


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
