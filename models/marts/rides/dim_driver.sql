{{ config(
    materialized='backfill_safe',
    unique_key='driver_key'
) }}

-- Type 2 (the yml): one row per driver version, effective from its updated_at until the next
-- version's, plus the unknown member for trips whose driver has not arrived yet.
select
    driver_id,
    driver_name,
    vehicle_class,
    commission_rate,
    is_deleted,
    updated_at
from {{ ref('stg_rides__driver_versions') }}
