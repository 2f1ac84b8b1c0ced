{{ config(
    materialized='backfill_safe',
    unique_key='daily_city_key',
    partition_by=['trip_date']
) }}

-- Trips, distance, fares and commission by trip date and city. Its scope (the trip dates whose
-- trips fct_trip's runs changed): the yml.
select
    daily_city_key,
    trip_date,
    city,
    trip_count,
    distance_km,
    fare_amount,
    commission_amount,
    is_deleted
from {{ ref('int_daily_city_trips__current_state') }}
