-- The current state of every order line as the fact should show it, computed from the staged
-- current versions with no incremental logic: one row per (order_id, order_item_id) ever seen,
-- `is_deleted` when the line, its order, or the order's arrival says it must not be in the fact.
-- fct_order_item is this view restricted to a run's scope; the reconciliation tests compare
-- the fact with it.
with

order_items as (
    select * from {{ ref('stg_shop__order_items') }}
),

orders as (
    select * from {{ ref('stg_shop__orders') }}
),

product_versions as (
    select * from {{ ref('stg_shop__product_versions') }}
),

-- customers that arrived (deleted ones included: the dimension keeps them)
customers as (
    select customer_id from {{ ref('stg_shop__customers') }}
),

-- each line with its order (read once), and every version of its product
lines as (
    select
        order_items.order_id,
        order_items.order_item_id,
        order_items.product_id,
        order_items.quantity,
        order_items.unit_price,
        order_items.discount_amount,
        order_items.updated_at,
        order_items.is_deleted,
        orders.order_id is not null as order_arrived,
        orders.order_date,
        orders.customer_id,
        orders.channel,
        orders.ordered_at,
        orders.updated_at as order_updated_at,
        orders.is_deleted as order_is_deleted,
        customers.customer_id is not null as customer_arrived
    from order_items
    left join orders
        on order_items.order_id = orders.order_id
    left join customers
        on orders.customer_id = customers.customer_id
),

-- the product version in effect when the order was placed: the latest version effective at
-- ordered_at, else (ordered before the product's first version) the earliest one; none for a
-- line whose order has not arrived or whose product has no version
product_candidates as (
    select
        lines.*,
        product_versions.updated_at as product_valid_from,
        product_versions.unit_cost,
        row_number() over (
            partition by lines.order_id, lines.order_item_id
            order by
                case when product_versions.updated_at <= lines.ordered_at then 0 else 1 end,
                case
                    when product_versions.updated_at <= lines.ordered_at
                        then product_versions.updated_at
                end desc,
                product_versions.updated_at asc
        ) as candidate_rank
    from lines
    left join product_versions
        on
            lines.product_id = product_versions.product_id
            and lines.order_arrived
),

line_in_effect as (
    select * from product_candidates
    where candidate_rank = 1
),

joined as (
    select
        {{ surrogate_key(['order_id', 'order_item_id']) }} as order_item_sk,
        order_id,
        order_item_id,
        order_date,
        cast(date_format(order_date, 'yyyyMMdd') as int) as order_date_key,
        -- a customer or product that has not arrived: the dimensions' unknown member
        case
            when customer_arrived then {{ surrogate_key(['customer_id']) }}
            else {{ unknown_member_key() }}
        end as customer_key,
        case
            when product_valid_from is not null
                then {{ surrogate_key(['product_id', 'product_valid_from']) }}
            else {{ unknown_member_key() }}
        end as product_key,
        {{ surrogate_key(['channel']) }} as channel_key,
        quantity,
        cast(quantity * unit_price as decimal(18, 2)) as gross_amount,
        cast(discount_amount as decimal(18, 2)) as discount_amount,
        cast(quantity * unit_price - discount_amount as decimal(18, 2)) as net_amount,
        cast(quantity * unit_cost as decimal(18, 2)) as cost_amount,
        -- the latest change of any version this row reflects
        greatest(updated_at, order_updated_at, product_valid_from) as updated_at,
        (
            is_deleted
            or coalesce(order_is_deleted, false)
            or not order_arrived
        ) as is_deleted
    from line_in_effect
)

select * from joined
