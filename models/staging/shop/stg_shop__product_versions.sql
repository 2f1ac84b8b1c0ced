-- Every distinct version of every product (one row per product_id and updated_at), the
-- history dim_product (type 2) is built from. Duplicates of a version collapse to one row by
-- the same rule that picks a current version.
with

source as (
    select * from {{ source('shop', 'products') }}
),

-- landed versions that break no rule (the others: audit_quarantined_rows)
loadable as (
    {{ screened_versions('source', 'products') }}
),

deduplicated as (
    {{ latest_version('loadable', ['product_id', 'updated_at']) }}
),

renamed as (
    select
        product_id,
        trim(product_name) as product_name,
        lower(trim(category)) as category,
        unit_cost,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from deduplicated
)

select * from renamed
