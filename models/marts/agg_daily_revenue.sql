{{ config(
    materialized='backfill_safe', unique_key='daily_revenue_key', partition_by=['order_date']
) }}

-- Revenue by order date and channel. Its scope (the order dates whose lines fct_order_item's
-- runs changed): the yml.
select
    {{ surrogate_key(['order_date', 'channel_key']) }} as daily_revenue_key,
    order_date,
    channel_key,
    count(distinct order_id) as order_count,
    count(*) as line_count,
    sum(quantity) as quantity,
    sum(net_amount) as net_amount,
    sum(cost_amount) as cost_amount
from {{ ref('fct_order_item') }}
group by order_date, channel_key
