{#- The partition predicate of a sales fact's run, on `column` (its order_date): the order
    dates of every version of every order in the run's scope (scope_order_ids), as literals, or
    none when every order is in scope or the model is not scoped by orders. Every row the run
    writes, deletes or matches belongs to one of those orders, and its order date (the table's
    or the new one) is the date of one of their versions, so the predicate keeps the MERGE
    exact while Iceberg plans only those partitions' files: merge_source's read of the table
    and the MERGE's ON clause (guarded_merge_sql) both take it. Literals, not a subquery:
    Iceberg prunes files at planning time only on predicates it is given as values. The model
    says it is scoped by orders in its config: meta `scope_by_orders: {domain, awaiting}`.
    Called after cache_scope_orders made the run's cached views (by the select, after it, and
    by the MERGE): the dates come from the cached versions of the run's orders, not from
    raw.orders. -#}
{% macro scope_order_dates(column) %}
    {% if not execute or not is_incremental() %}
        {{ return(none) }}
    {% endif %}
    {% set settings = model_meta('scope_by_orders') %}
    {% if not settings %}
        {{ return(none) }}
    {% endif %}
    {% set order_ids = scope_order_ids(settings['domain']) %}
    {% if order_ids is none %}
        {{ return(none) }}
    {% endif %}
    {#- as text: the embedded engine returns dates, the Thrift Server strings -#}
    {#- memoized: the select and the MERGE both ask -#}
    {% set rows = memoized_rows(
        "select distinct date_format(ordered_at, 'yyyy-MM-dd') as order_date from "
        ~ versions_in_scope('shop', 'orders', cached_scope_orders_subquery())
        ~ " as versions where ordered_at is not null") %}
    {% set dates = [] %}
    {% for row in rows %}
        {% set text = row[0] | string %}
        {% if not modules.re.fullmatch('[0-9]{4}-[0-9]{2}-[0-9]{2}', text) %}
            {{ exceptions.raise_compiler_error(
                "model " ~ this ~ ": shop.orders.ordered_at gave an order date " ~ text) }}
        {% endif %}
        {% do dates.append("date'" ~ text ~ "'") %}
    {% endfor %}
    {% if dates | length == 0 %}
        {{ return("false") }}
    {% endif %}
    {{ return(column ~ " in (" ~ (dates | sort | join(", ")) ~ ")") }}
{% endmacro %}
