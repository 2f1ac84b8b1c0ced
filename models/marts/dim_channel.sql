{{ config(materialized='backfill_safe', unique_key='channel_key') }}

-- One row per sales channel: the reference seed, plus any channel code an order names that the
-- seed does not list (named after its code, group 'unknown'), so every fact row has its channel.
-- A reference table (the yml): the table keeps every channel it has held, so a daily run reads
-- only the current versions of the orders with a version landed since its last run that names
-- a channel the table lacks (on most days none: no order is read).
with

reference as (
    select * from {{ ref('channels') }}
),

observed as (
    select distinct channel
    from {{ ref('stg_shop__orders') }}
    where
        channel is not null
        and {{ landed_since_last_run('shop', 'orders', key='order_id', new_values_of='channel') }}
),

all_channels as (
    select
        coalesce(reference.channel, observed.channel) as channel,
        coalesce(reference.channel_name, initcap(observed.channel)) as channel_name,
        coalesce(reference.channel_group, 'unknown') as channel_group
    from reference
    full outer join observed
        on reference.channel = observed.channel
)

select
    {{ surrogate_key(['channel']) }} as channel_key,
    channel,
    channel_name,
    channel_group
from all_channels
