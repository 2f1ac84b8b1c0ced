with

source as (
    select * from {{ source('shop', 'order_items') }}
),

-- landed versions that break no rule (the others: audit_quarantined_rows)
loadable as (
    {{ screened_versions('source', 'order_items') }}
),

current_version as (
    {{ latest_version('loadable', ['order_id', 'order_item_id']) }}
),

renamed as (
    select
        order_id,
        order_item_id,
        product_id,
        quantity,
        unit_price,
        coalesce(discount_amount, 0) as discount_amount,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from current_version
)

select * from renamed
