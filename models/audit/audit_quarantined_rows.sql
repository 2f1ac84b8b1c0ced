-- Quarantine: every landed version the staging views do not load, with the rule it broke
-- (quarantine_reason, screened_versions), for every landed raw table the sources declare
-- (config.meta.backfill_safe). The rows stay in raw: nothing is lost, and a fixed version
-- landed later (a newer update time) simply supersedes them. A view, so it is always current;
-- the data test landed_rows_are_loaded_or_quarantined checks that every landed file's rows are
-- all either loaded or listed here.
{%- set tables = landed_tables() %}
{%- if execute and not tables %}
    {{ exceptions.raise_compiler_error(
        "audit_quarantined_rows: no source declares a landed raw table (config.meta.backfill_safe)") }}
{%- endif %}
{%- if not execute %}
    {%- set tables = [('placeholder_source', 'placeholder_table')] %}
{%- endif %}
{%- for source_name, table in tables %}
    {%- if not loop.first %}
union all
    {%- endif %}
    {{ quarantined_versions(source_name, table) }}
{%- endfor %}
