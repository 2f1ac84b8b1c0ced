{#- SQL: the rows a snapshot removed from its table's live set, from its summary map column
    `summary`: the rows of removed data files (copy-on-write) plus its position and equality
    deletes (merge-on-read leaves the data files and adds delete files). -#}
{% macro deleted_records_figure(summary) %}
    {%- set figures = ['deleted-records', 'added-position-deletes', 'added-equality-deletes'] -%}
    {%- for figure in figures -%}
        coalesce(cast({{ summary }}['{{ figure }}'] as bigint), 0){{ " + " if not loop.last }}
    {%- endfor -%}
{% endmacro %}
