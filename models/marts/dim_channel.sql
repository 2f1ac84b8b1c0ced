{{
    config(
        unique_key='channel_key',
        version_column=none,
        meta={'probe_before_staging': true},
    )
}}

-- One row per sales channel: the reference seed, plus any channel code seen in orders that the
-- seed does not list (named after its code, group 'unknown'), so every fact row has its channel.
{#- A daily run reads the current version of some orders only: those with a version landed
    after the last committed run started (incremental_landed_bound), which that run had not
    read, and only when that version names a channel the table lacks. Every other order's
    current version landed earlier, was current at the last run too (a version landed since
    would outrank it, or be it), so its channel is in the table, and the dimension never drops
    a channel (merge_source sends only new or changed rows). On most days no landed version
    names a new channel (one pruned probe tells): no order version is read at all, and only the
    seed is compared with the table. Without a recorded start: the orders with a version
    updated after the lower bound, and those with a version naming a channel the table does not
    hold (however old: a scan of every order version). A full build and a backfill read every
    order. -#}
{%- set order_ids = none %}
{%- set observes_nothing = false %}
{%- set landed_bound = incremental_landed_bound() %}
{%- set lower_bound = none %}
{%- if landed_bound is none and backfill_window() is none %}
    {%- set lower_bound = incremental_lower_bound('sales') %}
{%- endif %}
{%- set unknown_channel = "lower(trim(channel)) not in (select known.channel from " ~ this
    ~ " as known where known.channel is not null)" %}
{%- if landed_bound is not none %}
    {%- set order_ids = "select order_id from " ~ source('shop', 'orders') ~ " where _loaded_at > "
        ~ landed_bound ~ " and " ~ unknown_channel %}
    {%- if execute %}
        {%- set observes_nothing = run_query(
            "select count(*) from (" ~ order_ids ~ " limit 1) as landed").rows[0][0] == 0 %}
    {%- endif %}
{%- elif lower_bound is not none %}
    {%- set order_ids = "select order_id from " ~ source('shop', 'orders') ~ " where updated_at > " ~ lower_bound
        ~ " union select order_id from " ~ source('shop', 'orders') ~ " where " ~ unknown_channel %}
{%- endif %}
-- depends_on: {{ ref('stg_shop__orders') }}

with

reference as (
    select * from {{ ref('channels') }}
),

observed as (
    {% if observes_nothing %}
        -- no version landed since the last run names a channel the table lacks
        select cast(null as string) as channel
        where false
    {% else %}
        select distinct channel
        from (
            {{ staged_orders(order_ids) }}
        ) as current_orders
        where channel is not null
    {% endif %}
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
