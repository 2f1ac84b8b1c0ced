{{
    config(
        unique_key='product_key',
    )
}}

-- Type 2: one row per product version, effective from its updated_at until the next version's.
-- A run rebuilds every version of each product that has a version changed after the lower
-- bound, so a late version both appears and closes the interval of the version before it.
-- Plus the unknown member (product_id -1), for facts whose product has not arrived yet.
{%- set scope = incremental_scope('products') %}

with

scoped_versions as (
    {{ versions_of_changed_members(ref('stg_shop__product_versions'), 'product_id', scope) }}
),

-- the unknown member: what facts point to while their product has not arrived
unknown_member as (
    select
        {{ unknown_member_key() }} as product_key,
        cast(-1 as bigint) as product_id,
        'Unknown product' as product_name,
        'unknown' as category,
        cast(null as decimal(12, 2)) as unit_cost,
        false as is_deleted,
        cast('1900-01-01 00:00:00' as timestamp) as valid_from,
        cast(null as timestamp) as valid_to,
        true as is_current,
        cast('1900-01-01 00:00:00' as timestamp) as updated_at
),

live as (
    select
        {{ surrogate_key(['product_id', 'updated_at']) }} as product_key,
        product_id,
        product_name,
        category,
        unit_cost,
        is_deleted,
        {{ effective_interval('product_id') }},
        updated_at
    from scoped_versions
    union all
    select * from unknown_member
)

{{ merge_source('live') }}
