-- The current version of every customer: its landed versions that break no rule (the others:
-- audit_quarantined_rows), the latest per customer_id, renamed. The SQL is the macro
-- staged_customers, which the intermediate models inline restricted to a run's customers.
{{ staged_customers() }}
