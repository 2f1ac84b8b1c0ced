{#- The current version of every order (stg_shop__orders), or of the orders `order_ids` (a SQL
    subquery of order_id) only: see staged_versions. -#}
{% macro staged_orders(order_ids=none) -%}
    select
        order_id,
        customer_id,
        lower(trim(channel)) as channel,
        lower(trim(status)) as status,
        ordered_at,
        cast(ordered_at as date) as order_date,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from ({{ staged_versions('shop', 'orders', ['order_id'], order_ids) }}) as current_version
{%- endmacro %}
