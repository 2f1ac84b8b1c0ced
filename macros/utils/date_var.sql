{#- Var `name` as a SQL date literal (date 'YYYY-MM-DD'), after checking that it is a real day,
    and, with `not_before` (another var's name), not before that var's day: a compiler error
    naming the var otherwise, so no text of a var reaches SQL unchecked. For a select built
    from vars (the examples' calendar, dim_date). -#}
{% macro date_var(name, not_before=none) %}
    {% set day = backfill_safe.date_of_var(name) %}
    {% if not_before is not none and day is not none %}
        {% set floor = backfill_safe.date_of_var(not_before) %}
        {% if floor is not none and day < floor %}
            {{ exceptions.raise_compiler_error("var '" ~ not_before ~ "' (" ~ floor ~ ") is after '"
                ~ name ~ "' (" ~ day ~ ")") }}
        {% endif %}
    {% endif %}
    {{ return("date '" ~ (day if day is not none else '1970-01-01') ~ "'") }}
{% endmacro %}

{#- The date var `name` holds (a datetime.date), or a compiler error naming it; none while dbt
    parses (vars may be given at run time only). -#}
{% macro date_of_var(name) %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% set value = var(name, none) | string %}
    {% set match = modules.re.fullmatch(
        '([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])', value) %}
    {% if match %}
        {#- a real day: counted from the first of its month, it stays in that month -#}
        {% set day = modules.datetime.date(match.group(1) | int, match.group(2) | int, 1)
            + modules.datetime.timedelta(days=(match.group(3) | int) - 1) %}
        {% if day.month == match.group(2) | int %}
            {{ return(day) }}
        {% endif %}
    {% endif %}
    {{ exceptions.raise_compiler_error("var '" ~ name ~ "' must be a date YYYY-MM-DD; got: "
        ~ value) }}
{% endmacro %}
