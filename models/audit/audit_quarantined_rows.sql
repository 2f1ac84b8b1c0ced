-- Quarantine: every landed version the staging views do not load, with the rule it broke
-- (quarantine_reason, screened_versions). The rows stay in raw: nothing is lost, and a fixed
-- version landed later (a newer updated_at) simply supersedes them. A view, so it is always
-- current; the data test landed_rows_are_loaded_or_quarantined checks that every landed file's
-- rows are all either loaded or listed here.
with

orders as (
    {{ quarantined_versions('orders') }}
),

order_items as (
    {{ quarantined_versions('order_items') }}
),

customers as (
    {{ quarantined_versions('customers') }}
),

products as (
    {{ quarantined_versions('products') }}
)

select * from orders
union all
select * from order_items
union all
select * from customers
union all
select * from products
