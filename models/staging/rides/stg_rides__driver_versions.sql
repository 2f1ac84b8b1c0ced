-- Every distinct version of every driver (one row per driver_id and updated_at), the history
-- dim_driver (type 2) and the trips' commission are built from: the landed versions that break
-- no rule, one per version.

with

deduplicated as (
    {{ staged_versions('rides', 'drivers', ['driver_id', 'updated_at']) }}
),

renamed as (
    select
        driver_id,
        trim(driver_name) as driver_name,
        lower(trim(vehicle_class)) as vehicle_class,
        commission_rate,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from deduplicated
)

select * from renamed
