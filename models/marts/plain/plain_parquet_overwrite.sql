{{
    config(
        materialized='incremental',
        incremental_strategy='insert_overwrite',
        file_format='parquet',
        partition_by=['plain_id'],
    )
}}

-- A plain Parquet incremental model (var plain_models): dbt-spark overwrites the partitions its
-- select returns (an incremental run returns plain_id 1 only); a full refresh drops the table
-- and creates it again.
select
    label,
    plain_id
from (
    select
        '{{ var("plain_value", "first") }}' as label,
        1 as plain_id
    union all
    select
        'second' as label,
        2 as plain_id
) as two_rows
where {{ 'plain_id = 1' if is_incremental() else 'true' }}
