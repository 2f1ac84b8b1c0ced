{{
    config(
        unique_key='driver_key',
    )
}}

-- Type 2: one row per driver version, effective from its updated_at until the next version's.
-- A run rebuilds every version of each driver that has a version changed after the lower
-- bound, so a late version both appears and closes the interval of the version before it.
-- Plus the unknown member (driver_id -1), for trips whose driver has not arrived yet.
{%- set scope = incremental_scope(2) %}  {#- its own lookback: 2 days, as fct_trip's #}

with

scoped_versions as (
    {{ versions_of_changed_members(ref('stg_rides__driver_versions'), 'driver_id', scope) }}
),

-- the unknown member: what trips point to while their driver has not arrived
unknown_member as (
    select
        {{ unknown_member_key() }} as driver_key,
        cast(-1 as bigint) as driver_id,
        'Unknown driver' as driver_name,
        'unknown' as vehicle_class,
        cast(null as decimal(5, 4)) as commission_rate,
        false as is_deleted,
        cast('1900-01-01 00:00:00' as timestamp) as valid_from,
        cast(null as timestamp) as valid_to,
        true as is_current,
        cast('1900-01-01 00:00:00' as timestamp) as updated_at
),

live as (
    select
        {{ surrogate_key(['driver_id', 'updated_at']) }} as driver_key,
        driver_id,
        driver_name,
        vehicle_class,
        commission_rate,
        is_deleted,
        {{ effective_interval('driver_id') }},
        updated_at
    from scoped_versions
    union all
    select * from unknown_member
)

{{ merge_source('live') }}
