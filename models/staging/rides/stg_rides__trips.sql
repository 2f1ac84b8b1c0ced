-- The current version of every trip: its landed versions that break no rule (the others:
-- audit_quarantined_rows), the latest per trip_id, renamed.

with

current_version as (
    {{ staged_versions('rides', 'trips', ['trip_id']) }}
),

renamed as (
    select
        trip_id,
        driver_id,
        lower(trim(city)) as city,
        picked_up_at,
        cast(picked_up_at as date) as trip_date,
        distance_km,
        fare_amount,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from current_version
)

select * from renamed
