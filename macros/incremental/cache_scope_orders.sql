{#- Pre-hook of a model scoped by orders (meta `scope_by_orders`): computes the run's orders
    (scope_order_ids) once, into a cached temporary view of this session
    (scope_orders_relation), which the model's select reads by name. Without it each reference
    to the scope inside the model's select, and each pass of the copy-on-write MERGE over that
    select, evaluated the scope's raw scans again (measured at 1M: 24 scans of raw.order_items
    in one MERGE). Renders nothing when every order is in scope. -#}
{% macro cache_scope_orders() %}
    {% if not execute or not is_incremental() %}
        {{ return('') }}
    {% endif %}
    {% set settings = model_meta('scope_by_orders') %}
    {% if not settings %}
        {{ return('') }}
    {% endif %}
    {% set order_ids = scope_order_ids(settings['domain'], awaiting=settings.get('awaiting')) %}
    {% if order_ids is none %}
        {{ return('') }}
    {% endif %}
    {#- a temporary view replaced each run (a replaced view's cache is dropped), then cached
        eagerly; `cache table ... as select` would refuse a view that already exists -#}
    {% set relation = scope_orders_relation() %}
    {#- a statement, not run_query: DDL returns no rows, which run_query fails on through Thrift -#}
    {% call statement('create_scope_orders_view', fetch_result=false) %}
        create or replace temporary view {{ relation }} as {{ order_ids }}
    {% endcall %}
    cache table {{ relation }}
{% endmacro %}
