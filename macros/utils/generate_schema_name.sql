{#- Use a model's custom schema as-is (`staging`, `marts`) instead of dbt's default
    `<target schema>_<custom schema>`: the warehouse has one set of schemas per metastore. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
