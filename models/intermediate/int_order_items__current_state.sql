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

-- the product version in effect when the order was placed: the latest version effective at
-- ordered_at, else (ordered before the product's first version) the earliest one
product_candidates as (
    select
        order_items.order_id,
        order_items.order_item_id,
        product_versions.updated_at as product_valid_from,
        product_versions.unit_cost,
        row_number() over (
            partition by order_items.order_id, order_items.order_item_id
            order by
                case when product_versions.updated_at <= orders.ordered_at then 0 else 1 end,
                case
                    when product_versions.updated_at <= orders.ordered_at
                        then product_versions.updated_at
                end desc,
                product_versions.updated_at asc
        ) as candidate_rank
    from order_items
    inner join orders
        on order_items.order_id = orders.order_id
    inner join product_versions
        on order_items.product_id = product_versions.product_id
),

product_in_effect as (
    select * from product_candidates
    where candidate_rank = 1
),

joined as (
    select
        {{ surrogate_key(['order_items.order_id', 'order_items.order_item_id']) }}
            as order_item_sk,
        order_items.order_id,
        order_items.order_item_id,
        orders.order_date,
        cast(date_format(orders.order_date, 'yyyyMMdd') as int) as order_date_key,
        {{ surrogate_key(['orders.customer_id']) }} as customer_key,
        case
            when product_in_effect.product_valid_from is not null
                then {{ surrogate_key([
                    'order_items.product_id', 'product_in_effect.product_valid_from'
                ]) }}
        end as product_key,
        {{ surrogate_key(['orders.channel']) }} as channel_key,
        order_items.quantity,
        cast(order_items.quantity * order_items.unit_price as decimal(18, 2)) as gross_amount,
        cast(order_items.discount_amount as decimal(18, 2)) as discount_amount,
        cast(
            order_items.quantity * order_items.unit_price - order_items.discount_amount
            as decimal(18, 2)
        ) as net_amount,
        cast(order_items.quantity * product_in_effect.unit_cost as decimal(18, 2)) as cost_amount,
        -- the latest change of any version this row reflects
        greatest(
            order_items.updated_at, orders.updated_at, product_in_effect.product_valid_from
        ) as updated_at,
        (
            order_items.is_deleted
            or coalesce(orders.is_deleted, false)
            or orders.order_id is null
        ) as is_deleted
    from order_items
    left join orders
        on order_items.order_id = orders.order_id
    left join product_in_effect
        on
            order_items.order_id = product_in_effect.order_id
            and order_items.order_item_id = product_in_effect.order_item_id
)

select * from joined
