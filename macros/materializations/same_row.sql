{#- The condition that row `left` and row `right` (relation aliases) hold the same value in every
    one of `columns`, nulls equal (null-safe `<=>`): the one home of "the table already holds
    this row", read by rows_to_merge (a row not rewritten, a live row not sent) and
    restated_keys (a key whose row differs from its select). -#}
{% macro same_row(left, right, columns) %}
    {%- set pairs = [] -%}
    {%- for column in columns -%}
        {%- do pairs.append(left ~ "." ~ column ~ " <=> " ~ right ~ "." ~ column) -%}
    {%- endfor -%}
    {{- return("(" ~ pairs | join(" and ") ~ ")") -}}
{% endmacro %}
