-- Revenue by order date and channel as it should be now, from the line fact with no
-- incremental logic. agg_daily_revenue is this view restricted to a run's order dates.
select
    {{ surrogate_key(['order_date', 'channel_key']) }} as daily_revenue_key,
    order_date,
    channel_key,
    count(distinct order_id) as order_count,
    count(*) as line_count,
    sum(quantity) as quantity,
    sum(net_amount) as net_amount,
    sum(cost_amount) as cost_amount,
    false as is_deleted
from {{ ref('fct_order_item') }}
group by order_date, channel_key
