{{
    config(
        unique_key='customer_key',
    )
}}

-- Type 1: one row per customer, overwritten with the current version. A deleted customer keeps
-- its row, flagged is_deleted, so facts that reference it stay joinable.
{%- set scope = incremental_scope('customers') %}

with

customers as (
    select * from {{ ref('stg_shop__customers') }}
    {% if scope %}
        where {{ scope }}
    {% endif %}
),

live as (
    select
        {{ surrogate_key(['customer_id']) }} as customer_key,
        customer_id,
        email,
        country,
        segment,
        is_deleted,
        updated_at
    from customers
)

{{ merge_source('live') }}
