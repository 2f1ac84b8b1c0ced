-- The current version of every order line: its landed versions that break no rule (the others:
-- audit_quarantined_rows), the latest per (order_id, order_item_id), renamed. The SQL is the
-- macro staged_order_items, which the intermediate models inline restricted to a run's orders.
{{ staged_order_items() }}
