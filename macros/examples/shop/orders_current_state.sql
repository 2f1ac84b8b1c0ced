{#- The current state of every order with its totals from its current lines, no incremental
    logic: one row per order_id ever seen, `is_deleted` when the order is deleted.
    int_orders__current_state is this macro for every order; fct_orders inlines it for the
    orders of a run's scope only (`order_ids`, a SQL subquery of order_id): their versions,
    their lines (order_items_current_state) and the customers any version of them names. -#}
{% macro orders_current_state(order_ids=none) %}
{%- set customer_ids = customers_of_orders(order_ids) %}
    with

    order_versions as (
        {{ staged_orders(order_ids) }}
    ),

    order_line_state as (
        {{ order_items_current_state(order_ids) }}
    ),

    -- customers that arrived (deleted ones included: the dimension keeps them)
    order_customers as (
        select customer_id from ({{ staged_customers(customer_ids) }}) as current_customers
    ),

    order_totals as (
        select
            order_id,
            count(case when not is_deleted then 1 end) as item_count,
            coalesce(sum(case when not is_deleted then quantity end), 0) as total_quantity,
            coalesce(sum(case when not is_deleted then gross_amount end), 0) as gross_amount,
            coalesce(sum(case when not is_deleted then discount_amount end), 0) as discount_amount,
            coalesce(sum(case when not is_deleted then net_amount end), 0) as net_amount,
            coalesce(sum(case when not is_deleted then cost_amount end), 0) as cost_amount,
            -- a live line still without its product: the order's cost is incomplete
            coalesce(
                max(not is_deleted and product_key = {{ unknown_member_key() }}), false
            ) as awaits_product,
            -- deleted lines count too: removing a line changes the order's totals
            max(updated_at) as items_updated_at
        from order_line_state
        group by order_id
    ),

    order_state as (
        select
            order_versions.order_id,
            order_versions.order_date,
            cast(date_format(order_versions.order_date, 'yyyyMMdd') as int) as order_date_key,
            -- a customer that has not arrived: the dimension's unknown member
            case
                when order_customers.customer_id is not null then {{ surrogate_key(['order_versions.customer_id']) }}
                else {{ unknown_member_key() }}
            end as customer_key,
            {{ surrogate_key(['order_versions.channel']) }} as channel_key,
            order_versions.status,
            cast(coalesce(order_totals.item_count, 0) as int) as item_count,
            cast(coalesce(order_totals.total_quantity, 0) as bigint) as total_quantity,
            cast(coalesce(order_totals.gross_amount, 0) as decimal(18, 2)) as gross_amount,
            cast(coalesce(order_totals.discount_amount, 0) as decimal(18, 2)) as discount_amount,
            cast(coalesce(order_totals.net_amount, 0) as decimal(18, 2)) as net_amount,
            cast(coalesce(order_totals.cost_amount, 0) as decimal(18, 2)) as cost_amount,
            order_versions.ordered_at,
            coalesce(order_totals.awaits_product, false) as awaits_product,
            greatest(order_versions.updated_at, order_totals.items_updated_at) as updated_at,
            order_versions.is_deleted
        from order_versions
        left join order_totals
            on order_versions.order_id = order_totals.order_id
        left join order_customers
            on order_versions.customer_id = order_customers.customer_id
    )

    select * from order_state
{% endmacro %}
