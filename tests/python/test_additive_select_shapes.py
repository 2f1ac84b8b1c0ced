"""A model maintained by deltas keeps a min or max by evaluating its own select once per upstream
row (macro per_row_body: the upstream's unique key added to the select and the grouping). The
rewrite is plain Jinja over the compiled select: rendered here without dbt or Spark. A select
the rewrite could get wrong is left alone (None: every group a before image reaches at its
extreme is recomputed, exact); test_additive_deltas.py proves the rewritten select on real
tables."""

from __future__ import annotations

import re

import jinja2
import pytest

from pipeline import paths

pytestmark = pytest.mark.fast


class _Returned(Exception):
    pass


def _return(value):
    raise _Returned(value)


def per_row_body(body: str, upstream_key: str | None = "order_id") -> str | None:
    text = (paths.FRAMEWORK_DIR / "macros" / "materializations" / "additive_deltas.sql").read_text()
    start = text.index("{% macro per_row_body")
    macro = text[start:text.index("{% endmacro %}", start) + len("{% endmacro %}")]
    # the alias the select gives its upstream (upstream_alias, which reads the relation) as `o`
    macro = macro.replace("backfill_safe.upstream_alias(bare, upstream.relation).name", "'o'")
    template = jinja2.Environment(extensions=["jinja2.ext.do"]).from_string(
        macro + "{{ per_row_body(body, none, key) }}")
    try:
        template.render(body=body, key=upstream_key, modules={"re": re}, **{"return": _return})
    except _Returned as returned:
        return returned.args[0]
    raise AssertionError("per_row_body returned nothing")


def test_the_upstream_key_is_added_to_the_select_and_the_grouping():
    body = ("-- each customer's first order (fct_orders' rows)\n"
            "select customer_key, min(order_date) as first_order_date\n"
            "from marts.fct_orders as o\n"
            "where status <> 'it''s -- not a comment'\n"
            "group by customer_key")
    assert " ".join(per_row_body(body).split()) == (
        "select o.order_id as _upstream_key, customer_key, min(order_date) as first_order_date"
        " from marts.fct_orders as o where status <> 'it''s -- not a comment'"
        " group by o.order_id, customer_key")


@pytest.mark.parametrize("body", [
    # a grouping by position or by all: a column added in front changes what it groups by
    "select customer_key, max(order_date) as last_order_date from marts.fct_orders as o group by 1",
    "select customer_key, max(order_date) as last_order_date from marts.fct_orders as o group by all",
    # a literal that reads like SQL: the rewrite could land in it
    "select customer_key, 'group by' as note, max(order_date) as d from marts.fct_orders as o group by 1, 2",
    "select customer_key, 'select' as note, max(order_date) as d from marts.fct_orders as o group by customer_key",
    # more than one select or grouping, or distinct rows
    "select k, max(d) as d from (select * from marts.fct_orders) as o group by k",
    "select distinct k, max(d) as d from marts.fct_orders as o group by k",
])
def test_a_select_the_rewrite_could_get_wrong_is_left_alone(body: str):
    assert per_row_body(body) is None


def test_an_upstream_with_a_composite_key_is_left_alone():
    assert per_row_body("select k, max(d) as d from marts.fct_orders as o group by k", None) is None


class _Relation:
    identifier = "fct_orders"

    def __str__(self) -> str:
        return "marts.fct_orders"


class _Refused(Exception):
    pass


def upstream_alias(body: str) -> dict:
    text = (paths.FRAMEWORK_DIR / "macros" / "materializations" / "additive_deltas.sql").read_text()
    start = text.index("{% macro upstream_alias")
    macro = text[start:text.index("{% endmacro %}", start) + len("{% endmacro %}")]

    def refuse(message):
        raise _Refused(message)

    template = jinja2.Environment(extensions=["jinja2.ext.do"]).from_string(
        macro + "{{ upstream_alias(body, relation) }}")
    try:
        template.render(body=body, relation=_Relation(), modules={"re": re}, **{"return": _return},
                        exceptions={"raise_compiler_error": refuse},
                        model={"name": "agg_x", "original_file_path": "models/agg_x.sql"})
    except _Returned as returned:
        return returned.args[0]
    raise AssertionError("upstream_alias returned nothing")


@pytest.mark.parametrize("body, name, given", [
    ("select k, count(*) as n from marts.fct_orders as o group by k", "o", True),
    ("select k, count(*) as n from marts.fct_orders o where o.k > 0 group by k", "o", True),
    ("select k, count(*) as n from marts.fct_orders group by k", "fct_orders", False),
    ("select k, count(*) as n from marts.fct_orders\nwhere k > 0 group by k", "fct_orders", False),
    # a clause that follows a table without an alias is no alias
    ("select k, count(*) as n from marts.fct_orders qualify true group by k", "fct_orders", False),
    ("select * from marts.fct_orders pivot (sum(x) for k in (1, 2))", "fct_orders", False),
    ("select * from marts.fct_orders unpivot (x for k in (a, b))", "fct_orders", False),
    # another table whose name begins with the upstream's is not the upstream
    ("select k, count(*) as n from marts.fct_orders_v2 as v group by k", "fct_orders", False),
])
def test_the_name_a_select_reads_its_upstream_by_is_its_alias_else_the_table(body: str, name: str, given: bool):
    assert upstream_alias(body) == {"name": name, "given": given}


@pytest.mark.parametrize("read", ["tablesample (10 percent)", "version as of 3", "as o timestamp as of '2025-01-01'",
                                  "for system_time as of '2025-01-01'", "o for system_version as of 3",
                                  "system_time as of '2025-01-01'"])
def test_a_select_reading_its_upstream_sampled_or_as_of_a_version_is_refused_naming_it(read: str):
    with pytest.raises(_Refused, match=r"models/agg_x\.sql.*reads marts\.fct_orders as it is"):
        upstream_alias(f"select k, count(*) as n from marts.fct_orders {read} group by k")
