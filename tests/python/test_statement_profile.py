"""The test-suite profiler's report (scripts/harness/statement_profile.py) adds up what it read; the
benchmark's statement budget (scripts/harness/statement_budget.py) classes and sums a run's statements."""

from __future__ import annotations

import json

import pytest

from harness.statement_budget import StatementBudget, markdown, statement_class
from harness.statement_profile import report

pytestmark = pytest.mark.fast


def test_the_profile_report_splits_each_phase_into_dbt_spark_and_subprocess_time(tmp_path):
    test = "tests/python/test_a.py::test_one"
    lines = [
        {"test": test, "phase": "call", "kind": "sql", "seconds": 2.0, "in_dbt": True, "what": "merge into marts.t"},
        {"test": test, "phase": "call", "kind": "collect", "seconds": 1.0, "in_dbt": True, "what": ""},
        {"test": test, "phase": "call", "kind": "dbt", "seconds": 4.0, "in_dbt": False, "what": "invoke run"},
        {"test": test, "phase": "call", "kind": "sql", "seconds": 0.5, "in_dbt": False, "what": "select 1"},
        {"test": test, "phase": "call", "kind": "subprocess", "seconds": 3.0, "in_dbt": False, "what": "dbt seed"},
        {"test": test, "phase": "call", "kind": "phase", "seconds": 8.0, "in_dbt": False, "what": "call"},
        {"test": "tests/python/test_b.py::test_two", "phase": "setup", "kind": "phase", "seconds": 5.0,
         "in_dbt": False, "what": "setup"},
    ]
    profile = tmp_path / "profile.jsonl"
    profile.write_text("".join(json.dumps(line) + "\n" for line in lines))

    text = report(str(profile))
    assert text.splitlines()[0] == ("13 s in 1 tests; dbt 4 s in 1 invocations (Spark 3 s, dbt's own 1 s);"
                                    " the tests' own Spark 0 s; subprocesses 3 s")
    assert "      8      1  tests/python/test_a.py" in text and "      5      0  tests/python/test_b.py" in text
    assert "      8      4 (  1)            3             0           3  call      " + test in text
    assert "    2.0      1  merge into marts.t" in text
    assert report(str(profile), test="test_b").splitlines()[0].startswith("5 s in 0 tests; dbt 0 s")


# statements as a shop daily run sends them (dbt's query comment kept where dbt adds one)
SENT = {
    '/* {"app": "dbt"} */ merge into control.etl_watermark as target using ( select 1 )': "watermark",
    "insert into control.run_records select 'e99f', 'fct_orders', 'marts.fct_orders'": "run records",
    "insert into control.run_scans select v.invocation_id, v.model_name from v": "scan records",
    "merge into marts.fct_order_item as DBT_INTERNAL_DEST using scratch.fct_order_item__merge_source_1": "merge",
    "create table scratch.fct_order_item__merge_source_1 using parquet as select 1": "staging",
    "drop table if exists scratch.fct_order_item__merge_source_1": "staging",
    "create or replace temporary view scope_keys__fct_order_item as select 1": "scope",
    "cache table scope_keys__fct_order_item": "scope",
    # an aggregate maintained by deltas: its groups' moves, evaluated once and staged
    "create table scratch.agg_customer_orders__deltas_0a1b2c3d4e5f using parquet as with d as (select 1)": "deltas",
    "drop table if exists scratch.agg_customer_orders__deltas_0a1b2c3d4e5f": "deltas",
    "describe extended marts.fct_order_item": "describe",
    "show table extended in control like '*'": "describe",
    "show views like 'scope_shared_*'": "catalog",
    "create schema if not exists scratch": "catalog",
    "insert into control.fct_order_item__changes (_change, _invocation_id) select 1": "write",
    "select count(*) from control.fct_order_item__changes where _change = 'rebuilt'": "control read",
    "select distinct order_id from scratch.fct_order_item__merge_source_1 limit 20001": "read",
}


def test_the_statement_budget_classes_each_statement_by_what_it_is_for():
    assert {sql: statement_class(sql) for sql in SENT} == SENT
    assert statement_class("refresh table marts.fct_orders") == "other"


def test_the_statement_budget_report_names_each_node_and_its_time_outside_spark():
    from pipeline.dbt import NodeResult

    budget = StatementBudget(dbt=None)
    budget.statements = [
        {"node": "model.backfill_safe.fct_orders", "class": "merge", "seconds": 0.5, "sql": "merge into t"},
        {"node": "model.backfill_safe.fct_orders", "class": "scope", "seconds": 0.25, "sql": "cache table s"},
        {"node": "operation.backfill_safe.backfill_safe-on-run-end-0", "class": "watermark", "seconds": 1.0,
         "sql": "merge into control.etl_watermark"},
        {"node": "(outside dbt)", "class": "describe", "seconds": 0.1, "sql": "describe t"},
    ]
    nodes = [NodeResult("model.backfill_safe.fct_orders", "fct_orders", "model", "success", None, None, 1.0),
             NodeResult("operation.backfill_safe.backfill_safe-on-run-end-0", "backfill_safe-on-run-end-0",
                        "operation", "success", None, None, 1.25)]
    report = budget.report(nodes)
    assert list(report["models"]) == ["on-run-end-0", "fct_orders", "(outside dbt)"]
    assert report["models"]["fct_orders"] == {
        "statements": 2, "spark_s": 0.75, "node_s": 1.0,
        "classes": {"merge": {"statements": 1, "seconds": 0.5}, "scope": {"statements": 1, "seconds": 0.25}}}
    assert report["models"]["(outside dbt)"]["node_s"] is None
    # the totals are a run's: the statements outside dbt are not in them
    assert report["classes"] == {"watermark": {"statements": 1, "seconds": 1.0},
                                 "merge": {"statements": 1, "seconds": 0.5}, "scope": {"statements": 1, "seconds": 0.25}}
    table = "\n".join(markdown(report))
    assert "| fct_orders | 2 | 1.00 | 0.75 | 0.25 | merge 1 / 0.50, scope 1 / 0.25 |" in table
    assert "All nodes: 3 statements, 1.75 s of Spark" in table
