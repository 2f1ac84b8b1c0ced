{#- The rows of a read-only query, run once per dbt invocation: later calls with the same SQL
    get the first call's rows (agate rows, as run_query's `.rows`) without a round trip. A
    model's run asks the same small questions from its select, its MERGE and its post-hook (its
    watermark and recorded start, whether anything landed, its scope's order dates): each one a
    Spark query of 0.1-0.2 s, 29 repeats in a daily run of the graph (docs/benchmarks/history.md).
    Only for answers that cannot change during the invocation but by our own writes:
    advance_watermark forgets them all (forget_memoized_rows) before it moves a watermark.
    The store is the invocation's `graph` (the one object every node's context shares; dbt gives
    macros no other), keyed by invocation_id, so a manifest kept across invocations (the
    backfill runner's) never hands one invocation's answers to the next. -#}
{% macro memoized_rows(sql) %}
    {% set memo = backfill_safe.invocation_memo() %}
    {% if sql not in memo %}
        {% do memo.update({sql: run_query(sql).rows}) %}
    {% endif %}
    {{ return(memo[sql]) }}
{% endmacro %}

{#- Drops every memoized answer of this invocation (memoized_rows): the next call of each query
    runs it again. -#}
{% macro forget_memoized_rows() %}
    {% do backfill_safe.invocation_memo().clear() %}
{% endmacro %}

{#- This invocation's memo (memoized_rows): a dict from SQL to rows, kept in `graph`. -#}
{% macro invocation_memo() %}
    {% set holder = graph.setdefault('backfill_safe_memoized_rows', {}) %}
    {% if holder.get('invocation_id') != invocation_id %}
        {% do holder.clear() %}
        {% do holder.update({'invocation_id': invocation_id, 'rows': {}}) %}
    {% endif %}
    {{ return(holder['rows']) }}
{% endmacro %}
