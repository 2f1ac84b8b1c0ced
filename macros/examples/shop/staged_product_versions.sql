{#- Every distinct version of every product (stg_shop__product_versions: one row per product_id
    and updated_at), see staged_versions. Duplicates of a version collapse by the rule that picks
    a current version. Never restricted: the facts read the catalog's versions whole (few next to
    the order lines; order_items_current_state). -#}
{% macro staged_product_versions() -%}
    select
        product_id,
        trim(product_name) as product_name,
        lower(trim(category)) as category,
        unit_cost,
        coalesce(is_deleted, false) as is_deleted,
        updated_at,
        _loaded_at,
        _source_file
    from ({{ staged_versions('shop', 'products', ['product_id', 'updated_at']) }}) as deduplicated
{%- endmacro %}
