{{ config(materialized='backfill_safe', unique_key='customer_key') }}

-- Each customer's lifetime orders and spend. Its scope (the customers whose orders fct_orders'
-- runs changed): the yml.
select
    customer_key,
    order_count,
    total_quantity,
    net_amount,
    first_order_date,
    last_order_date,
    is_deleted
from {{ ref('int_customer_orders__current_state') }}
