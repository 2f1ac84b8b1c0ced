-- The current state of every order with its totals from its current lines, no incremental
-- logic: one row per order_id ever seen, `is_deleted` when the order is deleted. The SQL is the
-- macro orders_current_state, which fct_orders inlines restricted to a run's orders.
-- depends_on: {{ ref('stg_shop__orders') }}, {{ ref('int_order_items__current_state') }}
-- depends_on: {{ ref('stg_shop__customers') }}
{{ orders_current_state() }}
