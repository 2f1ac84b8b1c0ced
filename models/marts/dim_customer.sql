{{
    config(
        unique_key='customer_key',
    )
}}

-- Type 1: one row per customer, overwritten with the current version. A deleted customer keeps
-- its row, flagged is_deleted, so facts that reference it stay joinable. Plus the unknown
-- member (customer_id -1), for facts whose customer has not arrived yet.
{%- set scope = incremental_scope('customers') %}
{#- the customers a daily run recomputes (over every raw version: each is recomputed from all
    its versions), a superset of the scope below: those with a version landed after the last
    committed run started (incremental_landed_bound): every version among the run's changes
    is, and so is every customer the table does not hold yet, since that run loaded every one
    landed before it. Without a recorded start: those with a version updated after the lower
    bound, and those the table does not hold (an anti-join of every customer against the
    table). The staging ranks only their versions. -#}
{%- set customer_ids = none %}
{%- set landed_bound = incremental_landed_bound() %}
{%- if scope and landed_bound %}
    {%- set customer_ids = "select customer_id from " ~ source('shop', 'customers')
        ~ " where _loaded_at > " ~ landed_bound %}
{%- elif scope and backfill_window() is none %}
    {%- set customer_ids = "select customer_id from " ~ source('shop', 'customers') ~ " where updated_at > "
        ~ incremental_lower_bound('customers') ~ " union (select customer_id from " ~ source('shop', 'customers')
        ~ " except select customer_id from " ~ this ~ ")" %}
{%- endif %}
-- depends_on: {{ ref('stg_shop__customers') }}

with

customers as (
    select * from (
        {{ staged_customers(customer_ids) }}
    ) as current_customers
    {% if scope %}
        -- and customers the table does not hold yet, however old their updated_at: facts
        -- re-key to a late-arriving customer as soon as it has landed. Not exists, not `not
        -- in`: under `or`, Spark joins a `not in` by a nested loop (null-aware), every customer
        -- in scope against every customer of the table
        where
            {{ scope }}
            or not exists (
                select 1 from {{ this }} as known
                where known.customer_id = current_customers.customer_id
            )
    {% endif %}
),

-- the unknown member: what facts point to while their customer has not arrived
unknown_member as (
    select
        {{ unknown_member_key() }} as customer_key,
        cast(-1 as bigint) as customer_id,
        cast(null as string) as email,
        cast(null as string) as country,
        'unknown' as segment,
        false as is_deleted,
        cast('1900-01-01 00:00:00' as timestamp) as updated_at
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
    union all
    select * from unknown_member
)

{{ merge_source('live') }}
