{#- The control table holding one high-water mark per pipeline. -#}
{% macro watermark_relation() -%}
    {{ var('control_schema', 'control') }}.etl_watermark
{%- endmacro %}
