-- Each customer's orders as they should be now (lifetime count, spend, first and last order
-- date), from the order fact with no incremental logic. agg_customer_orders is this view
-- restricted to a run's customers.
select
    customer_key,
    count(*) as order_count,
    sum(total_quantity) as total_quantity,
    sum(net_amount) as net_amount,
    min(order_date) as first_order_date,
    max(order_date) as last_order_date,
    false as is_deleted
from {{ ref('fct_orders') }}
group by customer_key
