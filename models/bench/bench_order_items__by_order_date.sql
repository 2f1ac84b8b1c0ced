{{ config(materialized='view', event_time='order_date') }}

-- The current state of the order lines with `event_time` declared, so that dbt's microbatch
-- strategy filters it to each batch's order dates (the product's intermediate view declares no
-- event time: the product's models scope by update time, not by event date).
select
    order_item_sk,
    order_id,
    order_item_id,
    order_date,
    order_date_key,
    customer_key,
    product_key,
    channel_key,
    quantity,
    gross_amount,
    discount_amount,
    net_amount,
    cost_amount,
    updated_at,
    is_deleted
from {{ ref('int_order_items__current_state') }}
