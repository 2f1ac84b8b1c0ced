{#- The explicit window of a backfill, from `--vars '{backfill_start: YYYY-MM-DD,
    backfill_end: YYYY-MM-DD}'` (event dates, end exclusive), as {start, end} strings; none
    for a daily run. Both or neither must be given, as valid dates with start < end. -#}
{% macro backfill_window() %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% set start = var('backfill_start', none) %}
    {% set end = var('backfill_end', none) %}
    {% if start is none and end is none %}
        {{ return(none) }}
    {% endif %}
    {% set parsed = [] %}
    {% for name, value in [('backfill_start', start), ('backfill_end', end)] %}
        {% set well_formed = modules.re.fullmatch('[0-9]{4}-[0-9]{2}-[0-9]{2}', value | string) %}
        {% if value is none or not well_formed %}
            {{ exceptions.raise_compiler_error(
                "var '" ~ name ~ "' must be a date YYYY-MM-DD (both backfill vars are needed); got: "
                ~ value) }}
        {% endif %}
        {% do parsed.append(modules.datetime.date.fromisoformat(value | string)) %}
    {% endfor %}
    {% if parsed[0] >= parsed[1] %}
        {{ exceptions.raise_compiler_error(
            "backfill_start must be before backfill_end (end is exclusive); got " ~ start ~ " .. " ~ end) }}
    {% endif %}
    {{ return({'start': parsed[0].isoformat(), 'end': parsed[1].isoformat()}) }}
{% endmacro %}
