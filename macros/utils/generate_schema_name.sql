{#- Use a model's custom schema as-is (`staging`, `marts`) instead of dbt's default
    `<target schema>_<custom schema>`: the warehouse has one set of schemas per metastore.
    The dual-run comparison (`pipeline compare`) builds one model by full refresh into a scratch
    schema (dual_run_schema). Applies when this repository is the root project; a team's
    project keeps its own and routes the dual run the same way (docs/guides/adopt-the-framework.md). -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- set dual_run = backfill_safe.dual_run_schema(node) -%}
    {%- if dual_run is not none -%}
        {{ dual_run }}
    {%- elif custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
