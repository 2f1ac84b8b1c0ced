with

source as (
    select * from {{ source('shop', 'customers') }}
),

-- landed versions that break no rule (the others: audit_quarantined_rows)
loadable as (
    {{ screened_versions('source', 'customers') }}
),

current_version as (
    {{ latest_version('loadable', ['customer_id']) }}
),

renamed as (
    select
        customer_id,
        lower(trim(email)) as email,
        upper(trim(country)) as country,
        lower(trim(segment)) as segment,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from current_version
)

select * from renamed
