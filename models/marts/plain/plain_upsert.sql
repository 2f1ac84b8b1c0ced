{{
    config(
        materialized='incremental',
        unique_key='plain_id',
        incremental_strategy='merge',
        file_format='iceberg',
    )
}}

-- A plain dbt model beside the framework's (var plain_models): dbt-spark's merge on `plain_id`, no
-- merge_source(), so none of the framework's MERGE, watermark or run records applies to it.
select
    1 as plain_id,
    '{{ var("plain_value", "first") }}' as label
union all
select
    2 as plain_id,
    'second' as label
