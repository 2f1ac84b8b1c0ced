{{ config(
    materialized='backfill_safe', unique_key='daily_revenue_key', partition_by=['order_date']
) }}

-- Revenue by order date and channel. Its scope (the order dates whose lines fct_order_item's
-- runs changed): the yml.
select
    daily_revenue_key,
    order_date,
    channel_key,
    order_count,
    line_count,
    quantity,
    net_amount,
    cost_amount,
    is_deleted
from {{ ref('int_daily_revenue__current_state') }}
