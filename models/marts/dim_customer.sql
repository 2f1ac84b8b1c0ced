{{ config(materialized='backfill_safe', unique_key='customer_key') }}

-- Type 1 (the yml): one row per customer, its current version; a deleted customer keeps its
-- row, flagged is_deleted, so facts that reference it stay joinable. Plus the unknown member.
select
    customer_id,
    email,
    country,
    segment,
    is_deleted,
    updated_at
from {{ ref('stg_shop__customers') }}
