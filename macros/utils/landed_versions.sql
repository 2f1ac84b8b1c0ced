{#- The landed versions of one raw table with their verdict, one row each: source and table,
    key, `reason` (null for a loadable version), update and landing time, file, and the landed
    row as JSON (its declared columns only). The verdict is screened_versions', the one definition of "loadable" that the
    staging, the quarantine audit (audit_quarantined_rows), the watermark's advance
    (advance_watermark) and its drift check (watermark_drift) all read: every row rule of
    quarantine_reason, the conflicting-versions rule, and any rule added there.
    keep: 'all', 'valid' (loadable) or 'quarantined'. `where`: SQL over the table's columns
    that restricts the versions read (none: all), written on the update time or the landing
    (`_loaded_at`) only: a group of conflicting versions (one key, one update time, one file)
    is then kept or dropped whole, so the restriction cannot change a version's verdict, and
    Iceberg skips the files whose bounds it excludes. -#}
{% macro landed_versions(source_name, table, keep='all', where=none) %}
    {%- set contract = backfill_safe.landing_contract(source_name, table) %}
    {#- while dbt parses, the tables are not known yet (landed_tables reads the graph): a
        placeholder that registers no source -#}
    {%- set relation = source(source_name, table) if execute
        else backfill_safe.validated_identifier(source_name ~ '__' ~ table) %}
    {%- if where is not none %}
        {%- set relation = "(select * from " ~ relation ~ " where " ~ where ~ ")" %}
    {%- endif %}
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
        {#- the row as the source sent it: its declared columns, none of the screening's own
            (_payload, _row_problem, ...) nor the landing's, which have columns of their own -#}
        to_json(struct(
            {%- for column in contract.columns if column not in ('_loaded_at', '_source_file') %}
            {{ column }}{{ "," if not loop.last }}
            {%- endfor %}
        )) as landed_row
    from ({{ backfill_safe.screened_versions(relation, source_name, table, keep=keep) }}) as screened
{%- endmacro %}
