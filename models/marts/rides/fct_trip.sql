{{ config(
    materialized='backfill_safe',
    unique_key='trip_id',
    partition_by=['trip_date']
) }}

-- One row per trip as it should be now (voided trips flagged is_deleted), with the commission
-- of the driver version in effect when it started. Its scope and lookback: the yml.
select
    trip_id,
    trip_date,
    trip_date_key,
    driver_key,
    city,
    distance_km,
    fare_amount,
    commission_amount,
    updated_at,
    is_deleted
from {{ ref('int_trips__current_state') }}
