{{ config(
    materialized='backfill_safe',
    unique_key='trip_id',
    partition_by=['trip_date']
) }}

-- One row per trip as it should be now, `is_deleted` when the trip is voided. Its commission is
-- the one of the driver version in effect when the trip started (a late driver version restates
-- the trips started after it). Written with no incremental logic: a daily run reads it for the
-- trips its scope reaches (the yml), a full build for every trip, and the framework keeps this
-- select unscoped as the view marts.fct_trip__current_state, which the audit and the
-- reconciliation tests compare the table with.

with

trips as (
    select * from {{ ref('stg_rides__trips') }}
),

driver_versions as (
    select * from {{ ref('stg_rides__driver_versions') }}
),

-- the driver version in effect at picked_up_at: the latest effective by then, else (a trip
-- before the driver's first version) the earliest one; none while the driver has not arrived
driver_candidates as (
    select
        trips.*,
        driver_versions.updated_at as driver_valid_from,
        driver_versions.commission_rate,
        row_number() over (
            partition by trips.trip_id
            order by
                {{ version_in_effect_order('driver_versions.updated_at', 'trips.picked_up_at') }}
        ) as candidate_rank
    from trips
    left join driver_versions
        on trips.driver_id = driver_versions.driver_id
),

in_effect as (
    select * from driver_candidates
    where candidate_rank = 1
),

final as (
    select
        trip_id,
        trip_date,
        cast(date_format(trip_date, 'yyyyMMdd') as int) as trip_date_key,
        -- a driver that has not arrived: the dimension's unknown member
        case
            when driver_valid_from is not null
                then {{ surrogate_key(['driver_id', 'driver_valid_from']) }}
            else {{ unknown_member_key() }}
        end as driver_key,
        city,
        distance_km,
        fare_amount,
        cast(fare_amount * commission_rate as decimal(18, 2)) as commission_amount,
        -- the latest change of any version this row reflects
        greatest(updated_at, driver_valid_from) as updated_at,
        is_deleted
    from in_effect
)

select * from final
