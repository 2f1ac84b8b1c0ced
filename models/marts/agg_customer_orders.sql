{{ config(materialized='backfill_safe', unique_key='customer_key') }}

-- Each customer's lifetime orders and spend. Its scope (the customers whose orders fct_orders'
-- runs changed): the yml.
select
    customer_key,
    count(*) as order_count,
    sum(total_quantity) as total_quantity,
    sum(net_amount) as net_amount,
    min(order_date) as first_order_date,
    max(order_date) as last_order_date
from {{ ref('fct_orders') }}
group by customer_key
