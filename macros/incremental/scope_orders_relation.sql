{#- The session's temporary view of this model's scope (cache_scope_orders). -#}
{% macro scope_orders_relation() %}
    {{ return('scope_orders__' ~ validated_identifier(this.identifier)) }}
{% endmacro %}

{#- The session's cached temporary view of the raw versions of this model's orders in scope, of
    `table` (orders or order_items): cache_scope_orders makes it, versions_in_scope reads it. -#}
{% macro scope_versions_relation(table) %}
    {% if table not in ('orders', 'order_items') %}
        {{ exceptions.raise_compiler_error(
            "scope_versions_relation: orders or order_items, not '" ~ table ~ "'") }}
    {% endif %}
    {{ return('scope_' ~ table ~ '_versions__' ~ validated_identifier(this.identifier)) }}
{% endmacro %}

{#- The subquery of this model's orders in scope that cache_scope_orders returns: the key by
    which versions_in_scope recognises the run's scope. -#}
{% macro cached_scope_orders_subquery() %}
    {{ return('select order_id from ' ~ scope_orders_relation()) }}
{% endmacro %}
