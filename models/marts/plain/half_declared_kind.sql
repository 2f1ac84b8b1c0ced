{{
    config(
        materialized='backfill_safe',
        file_format='parquet',
        enabled=var('half_declared_models', false),
    )
}}

-- Half of the framework's kind (var half_declared_models): materialized 'backfill_safe' with
-- no unique_key, on parquet: refused before the run starts.
select 1 as plain_id
