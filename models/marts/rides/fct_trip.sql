{%- set awaiting = 'driver_key = ' ~ unknown_member_key() %}
{%- set lookback_days = 2 %}
{{
    config(
        unique_key='trip_id',
        partition_by=['trip_date'],
        meta={
            'backfill_safe': {
                'event_date': 'trip_date',
                'lookback': lookback_days,
                'current_state': 'int_trips__current_state',
                'measures': ['fare_amount', 'commission_amount'],
                'scope': {
                    'key': 'trip_id',
                    'event_time': 'rides.trips.picked_up_at',
                    'changes': [
                        'rides.trips',
                        {'source': 'rides.drivers', 'through': 'rides.trips',
                         'on': 'driver_id', 'effective_dated': true},
                    ],
                    'awaiting': awaiting,
                },
            },
        },
    )
}}

-- One row per current, non-voided trip, with the commission of the driver version in effect
-- when it started. A run's scope is every trip whose current state changed after the lower
-- bound (the stored watermark minus the 2-day lookback): a changed trip, or a driver version
-- now in effect for it; and every trip still pointing to an unknown driver, until it arrives.
{%- set scope = incremental_scope(lookback_days, 'trip_date', 'trip_id', awaiting=awaiting) %}
{%- set scoped_trips = cache_scope_keys() %}

with

current_state as (
    select * from {{ ref('int_trips__current_state') }}
    {% if scoped_trips %}
        where trip_id in ({{ scoped_trips }}) and ({{ scope }})
    {% elif scope %}
        where {{ scope }}
    {% endif %}
),

-- the rows of a full build; an incremental run sends current_state to merge_source instead
live as (  -- noqa: ST03
    select
        trip_id,
        trip_date,
        trip_date_key,
        driver_key,
        city,
        distance_km,
        fare_amount,
        commission_amount,
        updated_at
    from current_state
    where not is_deleted
)

{{ merge_source(
    'live', changes='current_state', unique_key='trip_id',
    existing=scope_existing_rows(scoped_trips)
) }}
