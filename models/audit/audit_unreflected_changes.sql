-- Late beyond the window: every fact key whose current state differs from its row in the
-- mart (missing, not deleted, or any column different) and that the next daily run will not
-- pick up (the change is older than the watermark minus the lookback), with the dates to
-- restate, over the last `restatement_horizon_days` days before the watermark.
-- `pipeline restate` backfills exactly the distinct restate_date and loaded_event_date values
-- of this view; no_unloaded_changes fails on the same rows.
with

order_items as (
    {{ unreflected_changes(
        ref('fct_order_item'), ref('int_order_items__current_state'), 'order_item_sk', 'sales',
        'fct_order_item', 'order_date', horizon_days=var('restatement_horizon_days')
    ) }}
),

orders as (
    {{ unreflected_changes(
        ref('fct_orders'), ref('int_orders__current_state'), 'order_id', 'sales',
        'fct_orders', 'order_date', horizon_days=var('restatement_horizon_days')
    ) }}
)

select * from order_items
union all
select * from orders
