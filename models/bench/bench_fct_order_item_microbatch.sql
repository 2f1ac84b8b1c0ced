{{
    config(
        incremental_strategy='microbatch',
        event_time='order_date',
        batch_size='day',
        begin='2025-01-01',
        lookback=3,
        partition_by=['order_date'],
    )
}}

-- Baseline (a): fct_order_item by dbt's built-in microbatch strategy. Each batch is one order
-- date; dbt-spark replaces the batch's partition (insert overwrite, dynamic mode) with the
-- current state of the lines ordered that day. Driven by the event date only: a correction of
-- a line ordered before the batches run is not picked up.
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
    updated_at
from {{ ref('bench_order_items__by_order_date') }}
where not is_deleted
