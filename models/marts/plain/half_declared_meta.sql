{{
    config(
        materialized='incremental',
        unique_key='plain_id',
        incremental_strategy='merge',
        file_format='iceberg',
        enabled=var('half_declared_models', false),
        meta={'backfill_safe': {'event_date': 'plain_id', 'lookback': 3, 'current_state': 'plain_upsert'}},
    )
}}

-- Half of the framework's kind (var half_declared_models): it declares config.meta.backfill_safe
-- but it is not materialized 'backfill_safe': refused before the run starts.
select 1 as plain_id
