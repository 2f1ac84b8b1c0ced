{{ config(materialized='backfill_safe', unique_key='order_id', partition_by=['order_date']) }}

-- One row per order as it should be now, with totals from its current lines (flagged
-- is_deleted when the order must not be in the fact). Its scope and lookback: the yml. The
-- current state is computed for the run's orders only (scope_keys), as fct_order_item's.
-- depends_on: {{ ref('int_orders__current_state') }}
select
    order_id,
    order_date,
    order_date_key,
    customer_key,
    channel_key,
    status,
    item_count,
    total_quantity,
    gross_amount,
    discount_amount,
    net_amount,
    cost_amount,
    ordered_at,
    awaits_product,
    updated_at,
    is_deleted
from ({{ orders_current_state(scope_keys()) }}) as order_state
