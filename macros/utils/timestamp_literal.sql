{#- A Python datetime as a Spark SQL timestamp literal (UTC session time zone). -#}
{% macro timestamp_literal(value) -%}
    timestamp'{{ value.strftime("%Y-%m-%d %H:%M:%S.%f") }}'
{%- endmacro %}
