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
