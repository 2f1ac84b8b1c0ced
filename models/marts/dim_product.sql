{{ config(materialized='backfill_safe', unique_key='product_key') }}

-- Type 2 (the yml): one row per product version, effective from its updated_at until the next
-- version's, plus the unknown member for lines whose product has not arrived yet.
select
    product_id,
    product_name,
    category,
    unit_cost,
    is_deleted,
    updated_at
from {{ ref('stg_shop__product_versions') }}
