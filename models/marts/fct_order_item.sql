{{ config(materialized='backfill_safe', unique_key='order_item_sk', partition_by=['order_date']) }}

-- One row per order line as it should be now (flagged is_deleted when the line, its order or
-- the order's arrival says it must not be in the fact). Its scope and lookback: the yml. The
-- current state is computed for the run's orders only (scope_keys): their versions are ranked
-- and joined, not the whole history's (int_order_items__current_state is the same SQL unscoped).
-- depends_on: {{ ref('int_order_items__current_state') }}
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
from ({{ order_items_current_state(scope_keys()) }}) as line_state
