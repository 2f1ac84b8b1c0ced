{#- Every distinct version of every product (stg_shop__product_versions: one row per product_id
    and updated_at), or of the products `product_ids` (a SQL subquery of product_id) only: see
    staged_versions. Duplicates of a version collapse by the rule that picks a current version. -#}
{% macro staged_product_versions(product_ids=none) -%}
    select
        product_id,
        trim(product_name) as product_name,
        lower(trim(category)) as category,
        unit_cost,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from ({{ staged_versions('products', ['product_id', 'updated_at'], product_ids, 'product_id') }}) as deduplicated
{%- endmacro %}
