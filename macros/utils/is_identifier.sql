{#- True when `value` is one plain identifier (letters, digits and underscores, not starting with
    a digit): the one rule for every column or table name a declaration splices into SQL. -#}
{% macro is_identifier(value) %}
    {% set pattern = '[A-Za-z_][A-Za-z0-9_]*' %}
    {{ return(value is string and modules.re.fullmatch(pattern, value) is not none) }}
{% endmacro %}
