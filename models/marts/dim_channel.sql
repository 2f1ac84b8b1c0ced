{{
    config(
        unique_key='channel_key',
        version_column=none,
    )
}}

-- One row per sales channel: the reference seed, plus any channel code seen in orders that the
-- seed does not list (named after its code, group 'unknown'), so every fact row has its channel.
{#- A daily run reads the current version of some orders only: those with a version landed
    after the last committed run started (incremental_landed_bound), which that run had not
    read: any channel a current version names and the table lacks is among theirs, and the
    dimension never drops a channel (merge_source sends only new or changed rows). Without a
    recorded start: those with a version updated after the lower bound, and those with a
    version naming a channel the table does not hold (however old: a scan of every order
    version). A full build and a backfill read every order. -#}
{%- set order_ids = none %}
{%- set landed_bound = incremental_landed_bound() %}
{%- set lower_bound = none %}
{%- if landed_bound is none and backfill_window() is none %}
    {%- set lower_bound = incremental_lower_bound('sales') %}
{%- endif %}
{%- if landed_bound is not none %}
    {%- set order_ids = "select order_id from " ~ source('shop', 'orders') ~ " where _loaded_at > " ~ landed_bound %}
{%- elif lower_bound is not none %}
    {%- set order_ids = "select order_id from " ~ source('shop', 'orders') ~ " where updated_at > " ~ lower_bound
        ~ " union select order_id from " ~ source('shop', 'orders') ~ " where lower(trim(channel)) not in"
        ~ " (select known.channel from " ~ this ~ " as known where known.channel is not null)" %}
{%- endif %}
-- depends_on: {{ ref('stg_shop__orders') }}

with

reference as (
    select * from {{ ref('channels') }}
),

observed as (
    select distinct channel
    from (
        {{ staged_orders(order_ids) }}
    ) as current_orders
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
