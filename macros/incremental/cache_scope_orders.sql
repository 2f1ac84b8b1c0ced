{#- The run's orders of a model scoped by orders (meta `scope_by_orders`), computed once: called
    by the model's select as it compiles, it creates a cached temporary view of this session
    (scope_orders_relation) from scope_order_ids, and the raw versions of those orders and of
    their lines (scope_versions_relation, read by versions_in_scope), and returns the subquery
    of the orders (cached_scope_orders_subquery), which the model's select, merge_source's read
    of the table (scope_existing_rows) and the order dates (scope_order_dates) all take. Before, a pre-hook made the view after the
    select had compiled, so the compile-time order dates evaluated the scope's raw scans once
    more (at 5M lines, the product branch reads the product_id of every line version). Without
    any cache, each reference to the scope inside the select and each pass of the MERGE
    evaluated them again (measured at 1M: 24 scans of raw.order_items in one MERGE).
    Returns none, and creates nothing, when every order is in scope (full build, full refresh,
    no watermark yet) or while dbt parses. -#}
{% macro cache_scope_orders() %}
    {% if not execute or not is_incremental() %}
        {{ return(none) }}
    {% endif %}
    {% set settings = model_meta('scope_by_orders') %}
    {% if not settings %}
        {{ exceptions.raise_compiler_error(
            "model " ~ this ~ ": cache_scope_orders needs meta scope_by_orders: {domain, awaiting}") }}
    {% endif %}
    {% set order_ids = scope_order_ids(settings['domain'], awaiting=settings.get('awaiting')) %}
    {% if order_ids is none %}
        {{ return(none) }}
    {% endif %}
    {#- a temporary view replaced each run (a replaced view's cache is dropped), then cached
        eagerly; `cache table ... as select` would refuse a view that already exists.
        Statements, not run_query: DDL returns no rows, which run_query fails on through Thrift -#}
    {% set relation = scope_orders_relation() %}
    {% call statement('create_scope_orders_view', fetch_result=false) %}
        create or replace temporary view {{ relation }} as {{ order_ids }}
    {% endcall %}
    {% call statement('cache_scope_orders', fetch_result=false) %}
        cache table {{ relation }}
    {% endcall %}
    {#- the raw versions of those orders, read once: the select refers to the versions of the
        scope's orders and lines several times (staging, current state, the customers they
        name), and each reference was a scan of the whole raw table (order_id is not
        clustered: nothing to prune) -#}
    {% for table in ['orders', 'order_items'] %}
        {% call statement('create_scope_versions_view', fetch_result=false) %}
            create or replace temporary view {{ scope_versions_relation(table) }} as
            select * from {{ source('shop', table) }}
            where order_id in (select order_id from {{ relation }})
        {% endcall %}
        {% call statement('cache_scope_versions', fetch_result=false) %}
            cache table {{ scope_versions_relation(table) }}
        {% endcall %}
    {% endfor %}
    {{ return(cached_scope_orders_subquery()) }}
{% endmacro %}
