{#- The current version of every order line (stg_shop__order_items), or of the lines of the
    orders `order_ids` (a SQL subquery of order_id) only: see staged_versions. -#}
{% macro staged_order_items(order_ids=none) -%}
    select
        order_id,
        order_item_id,
        product_id,
        quantity,
        unit_price,
        coalesce(discount_amount, 0) as discount_amount,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from ({{ staged_versions('shop', 'order_items', ['order_id', 'order_item_id'], order_ids) }}) as current_version
{%- endmacro %}
