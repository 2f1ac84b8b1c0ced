{#- dbt's schema naming, except for the dual run of `pipeline compare`, whose full refresh of
    one model goes to the framework's scratch schema. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- set dual_run = backfill_safe.dual_run_schema(node) -%}
    {%- if dual_run is not none -%}
        {{ dual_run }}
    {%- else -%}
        {{ default__generate_schema_name(custom_schema_name, node) }}
    {%- endif -%}
{%- endmacro %}
