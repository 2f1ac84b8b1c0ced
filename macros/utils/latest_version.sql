{#- Keep one row per key from an append-only table of versions: the version with the greatest
    update time (`update_column`: the landing contract's, its source's loaded_at_field); ties
    go to the later `_loaded_at`, then to a deletion (`is_deleted` true wins),
    then to the greater `_source_file` name, then to the greater hash of the whole row, so the
    winner never depends on physical row order. Exact duplicates collapse to one row.
    `relation` may be a CTE name. Output: the input's columns (plus `_version_rank`, always 1). -#}
{% macro latest_version(relation, key_columns, update_column) -%}
    select *
    from (
        select
            versions.*,
            row_number() over (
                partition by {{ key_columns | join(', ') }}
                order by
                    {{ update_column }} desc,
                    _loaded_at desc,
                    is_deleted desc,
                    _source_file desc,
                    xxhash64(to_json(struct(versions.*))) desc
            ) as _version_rank
        from {{ relation }} as versions
    ) as ranked
    where _version_rank = 1
{%- endmacro %}
