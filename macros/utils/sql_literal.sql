{#- A value read back from Spark (a key of a run's scope) as a Spark SQL literal: numbers
    (decimals too) as they print, text quoted (quotes and backslashes escaped), dates and times
    as typed literals. Anything else is a compiler error naming the value, not SQL built from
    it. -#}
{% macro sql_literal(value) %}
    {% if value is none %}
        {{ return('null') }}
    {% elif value is sameas true or value is sameas false %}
        {{ return(value | string | lower) }}
    {% elif value is number %}
        {{ return(value | string) }}
    {% elif value is string %}
        {{ return("'" ~ value | replace('\\', '\\\\') | replace("'", "\\'") ~ "'") }}
    {% elif value.strftime is defined and value.hour is defined %}
        {{ return(backfill_safe.timestamp_literal(value) | trim) }}
    {% elif value.strftime is defined %}
        {{ return("date'" ~ value.strftime('%Y-%m-%d') ~ "'") }}
    {% endif %}
    {{ exceptions.raise_compiler_error("sql_literal: no SQL literal for " ~ value) }}
{% endmacro %}
