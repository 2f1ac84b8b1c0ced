{#- The business key columns of a raw table of the shop source. -#}
{% macro source_key_columns(table) %}
    {%- set keys = {
        'orders': ['order_id'],
        'order_items': ['order_id', 'order_item_id'],
        'customers': ['customer_id'],
        'products': ['product_id'],
    } -%}
    {%- if table not in keys -%}
        {{ exceptions.raise_compiler_error(
            "source_key_columns: '" ~ table ~ "' is not a raw table of the shop source; expected one of "
            ~ (keys.keys() | list | sort | join(', '))) }}
    {%- endif -%}
    {{ return(keys[table]) }}
{%- endmacro %}
