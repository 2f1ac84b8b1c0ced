{% macro version_in_effect_order(valid_from, event_time) -%}
    {#- The order of a row's candidate versions of an effective-dated member (type 2) under which
        the first is the version in effect at the row's event time: the latest version valid from
        at or before it, else (an event before the member's first version) the earliest. For
        `row_number() over (partition by <the row's key> order by ...)`; keep rank 1. The scope's
        `effective_dated` changes (scope_keys_select) assume this rule: a new version reaches the rows
        whose event time is at or after it, or every row of the member when it is the earliest. -#}
    {%- set column = '[A-Za-z_][A-Za-z0-9_]*([.][A-Za-z_][A-Za-z0-9_]*)?' %}
    {%- for name, value in [('valid_from', valid_from), ('event_time', event_time)] %}
        {%- if not (value is string and modules.re.fullmatch(column, value)) %}
            {{ exceptions.raise_compiler_error(
                "version_in_effect_order in model " ~ model.name ~ ": " ~ name ~ " must be a"
                ~ " column, optionally qualified (alias.column), got " ~ value) }}
        {%- endif %}
    {%- endfor %}
    case when {{ valid_from }} <= {{ event_time }} then 0 else 1 end,
    case when {{ valid_from }} <= {{ event_time }} then {{ valid_from }} end desc,
    {{ valid_from }} asc
{%- endmacro %}
