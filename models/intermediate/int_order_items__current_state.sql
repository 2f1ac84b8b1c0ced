-- The current state of every order line as the fact should show it, with no incremental logic:
-- one row per (order_id, order_item_id) ever seen, `is_deleted` when the line, its order, or
-- the order's arrival says it must not be in the fact. The SQL is the macro
-- order_items_current_state, which fct_order_item inlines restricted to a run's orders; the
-- reconciliation tests compare the fact with this view.
-- depends_on: {{ ref('stg_shop__order_items') }}, {{ ref('stg_shop__orders') }}
-- depends_on: {{ ref('stg_shop__product_versions') }}, {{ ref('stg_shop__customers') }}
{{ order_items_current_state() }}
