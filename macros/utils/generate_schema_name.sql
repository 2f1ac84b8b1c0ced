{#- Use a model's custom schema as-is (`staging`, `marts`) instead of dbt's default
    `<target schema>_<custom schema>`: the warehouse has one set of schemas per metastore.
    The dual-run comparison (`pipeline compare`) builds one model by full refresh into a scratch
    schema: vars `dual_run_model` (that model only) and `dual_run_schema`. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- set dual_run_model = var('dual_run_model', none) -%}
    {%- if dual_run_model is not none and node is not none and node.name == dual_run_model -%}
        {{ backfill_safe.validated_identifier(var('dual_run_schema', 'dual_run')) | trim }}
    {%- elif custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
