{{ config(
    materialized='backfill_safe',
    unique_key='daily_city_key',
    partition_by=['trip_date']
) }}

-- Trips, distance, fares and commission by trip date and city. Its scope (the trip dates whose
-- trips fct_trip's runs changed): the yml.
select
    {{ surrogate_key(['trip_date', 'city']) }} as daily_city_key,
    trip_date,
    city,
    count(*) as trip_count,
    sum(distance_km) as distance_km,
    sum(fare_amount) as fare_amount,
    sum(commission_amount) as commission_amount
from {{ ref('fct_trip') }}
group by trip_date, city
