{{
    config(
        materialized='table',
        enabled=var('half_declared_models', false),
    )
}}

-- Half of the framework's kind (var half_declared_models): its select ends with merge_source(),
-- but it is a table, not an incremental merge model: refused as it compiles.
with

live as (
    select 1 as plain_id
)

{{ merge_source('live') }}
