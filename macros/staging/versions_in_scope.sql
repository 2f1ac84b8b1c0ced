{#- The versions of raw table `table` a staging reads, as a relation: every version (keys_in
    none); the run's cached versions of its orders when keys_in is the run's cached scope
    (cached_scope_orders_subquery: cache_scope_orders made them as the select began to compile),
    and of the customers those versions name (keys_in their customer_id), so the select's
    references to them read memory, not the raw table again; else the versions whose
    `key_column` is in keys_in. -#}
{% macro versions_in_scope(source_name, table, keys_in=none, key_column='order_id') %}
    {% if not keys_in %}
        {{ return(source(source_name, table)) }}
    {% endif %}
    {% if table in ('orders', 'order_items') and key_column == 'order_id'
        and keys_in == cached_scope_orders_subquery() %}
        {{ return(scope_versions_relation(table)) }}
    {% endif %}
    {% if table == 'customers' and key_column == 'customer_id'
        and keys_in == 'select customer_id from ' ~ scope_versions_relation('orders') %}
        {{ return(scope_versions_relation('customers')) }}
    {% endif %}
    {{ return("(select * from " ~ source(source_name, table) ~ " where " ~ key_column ~ " in ("
        ~ keys_in ~ "))") }}
{% endmacro %}
