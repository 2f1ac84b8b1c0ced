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
        {% if value is none %}
            {{ exceptions.raise_compiler_error("var '" ~ name ~ "' must be a date YYYY-MM-DD "
                ~ "(both backfill vars are needed); got none") }}
        {% endif %}
        {#- a real day, or an error naming the var (date_of_var: the one rule for date vars) -#}
        {% do parsed.append(backfill_safe.date_of_var(name)) %}
    {% endfor %}
    {% if parsed[0] >= parsed[1] %}
        {{ exceptions.raise_compiler_error(
            "backfill_start must be before backfill_end (end is exclusive); got " ~ start ~ " .. " ~ end) }}
    {% endif %}
    {{ return({'start': parsed[0].isoformat(), 'end': parsed[1].isoformat()}) }}
{% endmacro %}
