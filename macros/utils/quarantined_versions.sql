{#- The quarantined versions of one raw table of the shop source, one row each: table, key,
    reason, update and landing time, file, and the landed row as JSON (audit_quarantined_rows). -#}
{% macro quarantined_versions(table) %}
    select
        '{{ table }}' as source_table,
        concat_ws(
            '|',
            {% for key in source_key_columns(table) -%}
                coalesce(cast({{ key }} as string), 'null'){{ ", " if not loop.last }}
            {%- endfor %}
        ) as record_key,
        _quarantine_reason as reason,
        updated_at,
        _loaded_at,
        _source_file,
        to_json(struct(*)) as landed_row
    from ({{ screened_versions(source('shop', table), table, keep='quarantined') }}) as quarantined
{%- endmacro %}
