{#- The customers a run restricted to `order_ids` reads: every customer any version of those
    orders names (a subquery of customer_id); none when unrestricted (every customer). One home
    for the shop's current-state macros. -#}
{% macro customers_of_orders(order_ids=none) %}
    {%- if order_ids -%}
        {{ return("select customer_id from " ~ versions_in_scope('shop', 'orders', order_ids)) }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}
