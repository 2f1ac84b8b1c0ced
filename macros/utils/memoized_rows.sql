{#- The rows of a read-only query, run once per dbt invocation: later calls with the same SQL
    get the first call's rows (agate rows, as run_query's `.rows`) without a round trip. A
    model's run asks the same small questions from its select, its MERGE and its post-hook (its
    watermark and recorded start, whether anything landed, its scope's order dates): each one a
    Spark query, asked again and again in a daily run of the graph (docs/benchmarks/history.md).
    Only for answers that cannot change during the invocation but by our own writes:
    commit_watermarks forgets them all (forget_memoized_rows) before it moves the watermarks.
    Kept in invocation_store('memoized_rows'). -#}
{% macro memoized_rows(sql) %}
    {% set memo = backfill_safe.invocation_store('memoized_rows') %}
    {% if sql not in memo %}
        {% do memo.update({sql: run_query(sql).rows}) %}
    {% endif %}
    {{ return(memo[sql]) }}
{% endmacro %}

{#- Drops every memoized answer of this invocation (memoized_rows): the next call of each query
    runs it again. -#}
{% macro forget_memoized_rows() %}
    {% do backfill_safe.invocation_store('memoized_rows').clear() %}
{% endmacro %}

{#- A dict kept for this dbt invocation only, under `name`: the store is the invocation's
    `graph` (the one object every node's and hook's context shares; dbt gives macros no other),
    emptied when another invocation_id asks, so a manifest kept across invocations (the backfill
    runner's) never hands one invocation's entries to the next. memoized_rows keeps its answers
    here, advance_watermark the advances commit_watermarks writes. -#}
{% macro invocation_store(name) %}
    {% set holder = graph.setdefault('backfill_safe_' ~ name, {}) %}
    {% if holder.get('invocation_id') != invocation_id %}
        {% do holder.clear() %}
        {% do holder.update({'invocation_id': invocation_id, 'entries': {}}) %}
    {% endif %}
    {{ return(holder['entries']) }}
{% endmacro %}
