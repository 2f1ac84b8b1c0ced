{#- The current version of every customer (stg_shop__customers), or of the customers
    `customer_ids` (a SQL subquery of customer_id) only: see staged_versions. -#}
{% macro staged_customers(customer_ids=none) -%}
    select
        customer_id,
        lower(trim(email)) as email,
        upper(trim(country)) as country,
        lower(trim(segment)) as segment,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from ({{ staged_versions('shop', 'customers', ['customer_id'], customer_ids) }}) as current_version
{%- endmacro %}
