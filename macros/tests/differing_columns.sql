{#- The names of the columns whose values differ between two aliased rows, null-safe, joined
    with ', ' ('' when every column is equal): the one comparison the audits make
    (unreflected_changes, unreflected_changes_over_models). -#}
{% macro differing_columns(columns, left='expected', right='actual') %}
        concat_ws(
            ', ',
            {%- for column in columns %}
            case
                when not ({{ left }}.{{ column }} <=> {{ right }}.{{ column }}) then '{{ column }}'
            end{{ "," if not loop.last }}
            {%- endfor %}
        )
{%- endmacro %}
