{{
    config(
        materialized='incremental',
        incremental_strategy='append',
        file_format='iceberg',
    )
}}

-- A plain dbt model with the append strategy (var plain_models): every run adds its two rows.
select
    1 as plain_id,
    '{{ var("plain_value", "first") }}' as label
union all
select
    2 as plain_id,
    'second' as label
