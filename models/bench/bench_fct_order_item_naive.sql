{{
    config(
        incremental_strategy='merge',
        unique_key='order_item_sk',
        partition_by=['order_date'],
    )
}}

-- Baseline (b): fct_order_item by the textbook incremental model: the rows updated after the
-- table's greatest updated_at, merged with dbt-spark's own MERGE (`update set *` / `insert *`,
-- no incremental_predicates, so the target is scanned whole; no lookback, no delete handling,
-- every row in scope is rewritten whether it changed or not).
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
from {{ ref('int_order_items__current_state') }}
where
    not is_deleted
    {% if is_incremental() %}
        and updated_at > (select max(loaded.updated_at) from {{ this }} as loaded)
    {% endif %}
