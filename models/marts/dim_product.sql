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

product_versions as (
    select * from {{ ref('stg_shop__product_versions') }}
),

changed_products as (
    select distinct product_id
    from product_versions
    {% if scope %}
        -- and products the table does not hold yet, however old their versions: facts re-key
        -- to a late-arriving product as soon as it has landed
        -- (not exists, not `not in`: see dim_customer)
        where
            {{ scope }}
            or not exists (
                select 1 from {{ this }} as known
                where known.product_id = product_versions.product_id
            )
    {% endif %}
),

scoped_versions as (
    select product_versions.*
    from product_versions
    left semi join changed_products
        on product_versions.product_id = changed_products.product_id
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
        updated_at as valid_from,
        lead(updated_at) over (partition by product_id order by updated_at) as valid_to,
        lead(updated_at) over (partition by product_id order by updated_at) is null as is_current,
        updated_at
    from scoped_versions
    union all
    select * from unknown_member
)

{{ merge_source('live') }}
