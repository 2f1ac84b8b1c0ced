-- The current state of every order with its totals from its current lines, no incremental
-- logic: one row per order_id ever seen, `is_deleted` when the order is deleted. fct_orders is
-- this view restricted to a run's scope.
with

orders as (
    select * from {{ ref('stg_shop__orders') }}
),

order_items as (
    select * from {{ ref('int_order_items__current_state') }}
),

-- customers that arrived (deleted ones included: the dimension keeps them)
customers as (
    select customer_id from {{ ref('stg_shop__customers') }}
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
    from order_items
    group by order_id
),

joined as (
    select
        orders.order_id,
        orders.order_date,
        cast(date_format(orders.order_date, 'yyyyMMdd') as int) as order_date_key,
        -- a customer that has not arrived: the dimension's unknown member
        case
            when customers.customer_id is not null then {{ surrogate_key(['orders.customer_id']) }}
            else {{ unknown_member_key() }}
        end as customer_key,
        {{ surrogate_key(['orders.channel']) }} as channel_key,
        orders.status,
        cast(coalesce(order_totals.item_count, 0) as int) as item_count,
        cast(coalesce(order_totals.total_quantity, 0) as bigint) as total_quantity,
        cast(coalesce(order_totals.gross_amount, 0) as decimal(18, 2)) as gross_amount,
        cast(coalesce(order_totals.discount_amount, 0) as decimal(18, 2)) as discount_amount,
        cast(coalesce(order_totals.net_amount, 0) as decimal(18, 2)) as net_amount,
        cast(coalesce(order_totals.cost_amount, 0) as decimal(18, 2)) as cost_amount,
        orders.ordered_at,
        coalesce(order_totals.awaits_product, false) as awaits_product,
        greatest(orders.updated_at, order_totals.items_updated_at) as updated_at,
        orders.is_deleted
    from orders
    left join order_totals
        on orders.order_id = order_totals.order_id
    left join customers
        on orders.customer_id = customers.customer_id
)

select * from joined
