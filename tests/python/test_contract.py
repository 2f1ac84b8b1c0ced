"""The landing contract is the sources yml: read from dbt's manifest, checked, and refused with
the file, table and column named when the landing could not honour it. No Spark."""

from __future__ import annotations

import copy
import functools
import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pipeline import contract, paths
from pipeline.contract import Contract, ContractError
from pipeline.land import LandingError, table_for

pytestmark = pytest.mark.fast


@functools.cache
def _manifest() -> dict:
    contract.load()  # parses the project when its manifest is missing or older than a yml
    return json.loads((paths.target_dir() / "manifest.json").read_text())


@pytest.fixture(scope="module")
def manifest() -> dict:
    return _manifest()


def test_the_sources_ymls_are_the_landing_contract(manifest: dict):
    declared = Contract.from_manifest(manifest)
    # every source table with a backfill_safe block lands, whichever yml declares it: the
    # examples' and any a team adds (a new source is new files only: this test stays green)
    blocks = sorted(f"{s['source_name']}.{s['name']}" for s in manifest["sources"].values()
                    if "backfill_safe" in (s.get("config", {}).get("meta") or s.get("meta") or {}))
    assert sorted(declared.tables) == blocks
    assert {"rides.drivers", "rides.trips", "shop.customers", "shop.order_items", "shop.orders",
            "shop.products"} <= set(blocks)
    items = declared.table("order_items")
    assert items.relation == "raw.order_items" and items.unique_key == ("order_id", "order_item_id")
    assert items.update_column == "updated_at"
    assert items.arrow_schema().field("unit_price").type == pa.decimal128(12, 2)
    assert "_loaded_at" not in items.arrow_schema().names  # stamped by the landing, never in a file
    assert "partitioned by (days(updated_at))" in items.create_table_sql()


def _mutated(manifest: dict, change) -> dict:
    """The manifest with the order lines' source changed (a copy of that node only)."""
    key = "source.backfill_safe.shop.order_items"
    node = copy.deepcopy(manifest["sources"][key])
    change(node)
    return {**manifest, "sources": {**manifest["sources"], key: node}}


def _meta(node: dict) -> dict:
    return node["config"]["meta"]["backfill_safe"]


BROKEN = {
    "no data_type": (lambda n: n["columns"]["quantity"].pop("data_type"), "column 'quantity' declares no data_type"),
    "unsupported type": (lambda n: n["columns"]["quantity"].update(data_type="interval"),
                         "column 'quantity' has data_type 'interval'"),
    "no unique_key": (lambda n: _meta(n).pop("unique_key"), "backfill_safe.unique_key is missing"),
    "undeclared key": (lambda n: _meta(n).update(unique_key=["line_no"]), "unique_key column 'line_no' is not declared"),
    "no is_deleted": (lambda n: n["columns"].pop("is_deleted"), "column 'is_deleted' (boolean) is missing"),
    "mistyped update time": (lambda n: n["columns"]["updated_at"].update(data_type="date"),
                             "column 'updated_at' must be timestamp, not date"),
    "unknown rule": (lambda n: _meta(n)["quarantine"].append({"positive": "quantity"}),
                     "quarantine rule {'positive': 'quantity'} is not one of"),
    "rule on an undeclared column": (lambda n: _meta(n)["quarantine"].append({"not_null": "colour"}),
                                     "not_null names column 'colour', which is not declared"),
    "reject_if without reason": (lambda n: _meta(n)["quarantine"].append({"reject_if": "quantity > 99"}),
                                 "needs a reason"),
    "unknown key": (lambda n: _meta(n).update(lookback=3), "backfill_safe has no key 'lookback'"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_a_declaration_the_landing_cannot_honour_is_refused_naming_file_table_and_column(manifest: dict, case: str):
    change, message = BROKEN[case]
    with pytest.raises(ContractError) as raised:
        Contract.from_manifest(_mutated(manifest, change))
    assert message in str(raised.value)
    assert "models/staging/shop/_shop__sources.yml: source shop.order_items" in str(raised.value)


def test_a_project_without_a_landed_table_is_refused(manifest: dict):
    bare = copy.deepcopy(manifest)
    for node in bare["sources"].values():
        node["config"]["meta"].pop("backfill_safe", None)
        node["meta"].pop("backfill_safe", None)
    with pytest.raises(ContractError, match="no source of the dbt project declares a landed raw table"):
        Contract.from_manifest(bare)


def test_a_new_source_table_needs_only_its_declaration(manifest: dict):
    # a second source system with a table of its own and one whose name the shop also uses
    extended = copy.deepcopy(manifest)
    tickets = copy.deepcopy(extended["sources"]["source.backfill_safe.shop.customers"])
    tickets.update(source_name="support", name="tickets", identifier="tickets", schema="raw_support")
    tickets["columns"] = {n: {"name": n, "data_type": t} for n, t in [
        ("ticket_id", "bigint"), ("opened_at", "timestamp"), ("priority", "smallint"), ("score", "decimal(5,1)"),
        ("updated_at", "timestamp"), ("is_deleted", "boolean"), ("_loaded_at", "timestamp"),
        ("_source_file", "string")]}
    tickets["config"]["meta"]["backfill_safe"] = {"unique_key": "ticket_id", "quarantine": [{"not_null": "opened_at"}]}
    orders = copy.deepcopy(extended["sources"]["source.backfill_safe.shop.orders"])
    orders.update(source_name="support", schema="raw_support")
    extended["sources"].update({"source.backfill_safe.support.tickets": tickets,
                                "source.backfill_safe.support.orders": orders})
    declared = Contract.from_manifest(extended)

    assert declared.table("tickets").relation == "raw_support.tickets"
    assert declared.table("tickets").arrow_schema().field("score").type == pa.decimal128(5, 1)
    # the schemas of every declared source (a team's own too), and the new system's
    assert declared.schemas() == sorted(set(Contract.from_manifest(manifest).schemas()) | {"raw_support"})
    assert {"raw", "raw_support"} <= set(declared.schemas())
    assert table_for(Path("tickets-2025-01-02.csv"), declared).qualified_name == "support.tickets"
    assert table_for(Path("order_items-2.parquet"), declared).qualified_name == "shop.order_items"
    assert table_for(Path("support__orders.parquet"), declared).qualified_name == "support.orders"
    with pytest.raises(ContractError, match=r"landed by several sources; name one of \['shop.orders', 'support.orders'\]"):
        declared.table("orders")
    with pytest.raises(LandingError, match="name the file <source>__<table>"):
        table_for(Path("orders.parquet"), declared)
    with pytest.raises(LandingError, match="cannot tell the raw table from the file name"):
        table_for(Path("refunds.parquet"), declared)


HOSTILE_NAMES = st.one_of(
    st.sampled_from(("order`s", "orders; drop table raw.orders", "o'rders", 'o"rders', "order items", "1orders",
                     "orders--", "orders/*x*/", "raw.orders", "ordérs", "", "orders\n", "${orders}")),
    st.text(max_size=12).filter(lambda name: not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name)),
)


def _added_column(node: dict, name: str) -> None:
    node["columns"][name] = {"name": name, "data_type": "string"}


HOSTILE_PLACES = {
    "source name": lambda n, name: n.update(source_name=name),
    "table name": lambda n, name: n.update(name=name),
    "schema": lambda n, name: n.update(schema=name),
    "identifier": lambda n, name: n.update(identifier=name),
    "column": _added_column,
    "unique_key": lambda n, name: (_added_column(n, name), _meta(n).update(unique_key=["order_id", name])),
    "loaded_at_field": lambda n, name: n.update(loaded_at_field=name),
    "quarantine column": lambda n, name: (_added_column(n, name), _meta(n)["quarantine"].append({"not_null": name})),
}


@settings(max_examples=int(os.environ.get("LANDING_CASES", 500)) // 5, derandomize=True, database=None,
          deadline=None)
@given(place=st.sampled_from(sorted(HOSTILE_PLACES)), name=HOSTILE_NAMES)
def test_a_name_that_is_not_a_plain_identifier_is_refused_wherever_the_sources_yml_declares_it(place: str, name: str):
    """Quotes, backticks, semicolons, spaces, dots, comments, non-ASCII letters or nothing at all
    in a source's, table's, schema's, column's or key's name: refused before any SQL is written,
    naming the yml and the source."""
    assume(name or place not in ("identifier", "loaded_at_field"))  # empty is dbt's "unset" there
    with pytest.raises(ContractError) as raised:
        Contract.from_manifest(_mutated(_manifest(), lambda node: HOSTILE_PLACES[place](node, name)))
    assert "models/staging/shop/_shop__sources.yml: source " in str(raised.value)
