with

source as (
    select * from {{ source('shop', 'orders') }}
),

-- landed versions that break no rule (the others: audit_quarantined_rows)
loadable as (
    {{ screened_versions('source', 'orders') }}
),

current_version as (
    {{ latest_version('loadable', ['order_id']) }}
),

renamed as (
    select
        order_id,
        customer_id,
        lower(trim(channel)) as channel,
        lower(trim(status)) as status,
        ordered_at,
        cast(ordered_at as date) as order_date,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from current_version
)

select * from renamed
