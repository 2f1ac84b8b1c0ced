-- The current version of every order: its landed versions that break no rule (the others:
-- audit_quarantined_rows), the latest per order_id, renamed. The SQL is the macro
-- staged_orders, which the intermediate models inline restricted to a run's orders.
{{ staged_orders() }}
