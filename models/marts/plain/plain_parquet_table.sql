{{ config(materialized='table', file_format='parquet') }}

-- A plain Parquet table (var plain_models), as a team keeps beside Iceberg: dbt-spark drops it
-- and creates it again on every run, which the profile's session catalog must allow.
select
    1 as plain_id,
    '{{ var("plain_value", "first") }}' as label
union all
select
    2 as plain_id,
    'second' as label
