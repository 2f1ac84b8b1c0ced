{#- The count check of the landing: for every file `pipeline land` appended to this raw table
    (control.landed_files, written by the landing), the rows the file held equal the versions
    the staging views load plus the versions quarantined (audit_quarantined_rows). Fails with
    one row per file that lost or gained rows. Rows written to raw by other means than the
    landing command are not in the log and not checked. Quiet before anything was landed. -#}
{% test landed_rows_are_loaded_or_quarantined(model) %}
    {%- set log = adapter.get_relation(
        database=none, schema=var('control_schema', 'control'), identifier='landed_files') -%}
    {%- set source_name, table = backfill_safe.landed_table_of(model) if execute else ('', '') -%}
    {%- if log is none %}
select 1 as nothing
where false
    {%- else %}
with

landed as (
    select
        source_file,
        sum(file_rows) as file_rows
    from {{ log }}
    -- logged as source.table; the bare table name by a landing before the contract was declared
    where table_name in ('{{ backfill_safe.validated_identifier(source_name) }}.{{ backfill_safe.validated_identifier(table) }}',
                         '{{ backfill_safe.validated_identifier(table) }}')
    group by source_file
),

versions as (
    select
        _source_file as source_file,
        count_if(_quarantine_reason is null) as loaded_rows,
        count_if(_quarantine_reason is not null) as quarantined_rows
    from ({{ backfill_safe.screened_versions(model, source_name, table, keep='all') }}) as screened
    group by _source_file
)

select
    landed.source_file,
    landed.file_rows,
    coalesce(versions.loaded_rows, 0) as loaded_rows,
    coalesce(versions.quarantined_rows, 0) as quarantined_rows
from landed
left join versions
    on landed.source_file = versions.source_file
where landed.file_rows <> coalesce(versions.loaded_rows, 0) + coalesce(versions.quarantined_rows, 0)
    {%- endif %}
{% endtest %}
