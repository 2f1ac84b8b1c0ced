-- Trips by date and city as they should be now, from the trip fact with no incremental logic.
-- agg_daily_city_trips is this view restricted to a run's trip dates.
select
    {{ surrogate_key(['trip_date', 'city']) }} as daily_city_key,
    trip_date,
    city,
    count(*) as trip_count,
    sum(distance_km) as distance_km,
    sum(fare_amount) as fare_amount,
    sum(commission_amount) as commission_amount,
    false as is_deleted
from {{ ref('fct_trip') }}
group by trip_date, city
