{{
    config(
        unique_key='product_key',
    )
}}

-- Type 2: one row per product version, effective from its updated_at until the next version's.
-- A run rebuilds every version of each product that has a version changed after the lower
-- bound, so a late version both appears and closes the interval of the version before it.
{%- set scope = incremental_scope('products') %}

with

product_versions as (
    select * from {{ ref('stg_shop__product_versions') }}
),

changed_products as (
    select distinct product_id
    from product_versions
    {% if scope %}
        where {{ scope }}
    {% endif %}
),

scoped_versions as (
    select product_versions.*
    from product_versions
    left semi join changed_products
        on product_versions.product_id = changed_products.product_id
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
)

{{ merge_source('live') }}
