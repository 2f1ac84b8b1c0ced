{{
    config(
        unique_key='channel_key',
        version_column=none,
    )
}}

-- One row per sales channel: the reference seed, plus any channel code seen in orders that the
-- seed does not list (named after its code, group 'unknown'), so every fact row has its channel.
with

reference as (
    select * from {{ ref('channels') }}
),

observed as (
    select distinct channel
    from {{ ref('stg_shop__orders') }}
    where channel is not null
),

all_channels as (
    select
        coalesce(reference.channel, observed.channel) as channel,
        coalesce(reference.channel_name, initcap(observed.channel)) as channel_name,
        coalesce(reference.channel_group, 'unknown') as channel_group
    from reference
    full outer join observed
        on reference.channel = observed.channel
),

live as (
    select
        {{ surrogate_key(['channel']) }} as channel_key,
        channel,
        channel_name,
        channel_group
    from all_channels
)

{{ merge_source('live') }}
