{#- The session's temporary view of this model's scope (cache_scope_orders). -#}
{% macro scope_orders_relation() %}
    {{ return('scope_orders__' ~ validated_identifier(this.identifier)) }}
{% endmacro %}
