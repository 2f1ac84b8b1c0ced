{#- The quarantined versions of one landed raw table, one row each: source and table, key,
    reason, update and landing time, file, and the landed row as JSON (audit_quarantined_rows). -#}
{% macro quarantined_versions(source_name, table) %}
    {%- set contract = backfill_safe.landing_contract(source_name, table) %}
    {#- while dbt parses, the view's tables are not known yet (landed_tables reads the graph):
        a placeholder that registers no source -#}
    {%- set relation = source(source_name, table) if execute
        else backfill_safe.validated_identifier(source_name ~ '__' ~ table) %}
    select
        '{{ backfill_safe.validated_identifier(source_name) }}' as source_name,
        '{{ backfill_safe.validated_identifier(table) }}' as source_table,
        concat_ws(
            '|',
            {% for key in contract.unique_key -%}
                coalesce(cast({{ key }} as string), 'null'){{ ", " if not loop.last }}
            {%- endfor %}
        ) as record_key,
        _quarantine_reason as reason,
        {{ contract.update_column }} as updated_at,
        _loaded_at,
        _source_file,
        to_json(struct(*)) as landed_row
    from ({{ backfill_safe.screened_versions(relation, source_name, table, keep='quarantined') }}) as quarantined
{%- endmacro %}
