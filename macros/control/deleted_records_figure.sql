{#- SQL: the rows a snapshot removed from its table's live set, from its summary map column
    `summary`: the rows of removed data files (copy-on-write) plus its position and equality
    deletes (merge-on-read leaves the data files and adds delete files), less the deletes of the
    delete files it replaced (a delete of a row of a data file that has a delete file rewrites
    that file, and the summary counts its old deletes again among the added ones). The same
    sum as pipeline.iceberg.deleted_records. -#}
{% macro deleted_records_figure(summary) %}
    {%- set figures = [('deleted-records', none),
                       ('added-position-deletes', 'removed-position-deletes'),
                       ('added-equality-deletes', 'removed-equality-deletes')] -%}
    {%- for added, removed in figures -%}
        coalesce(cast({{ summary }}['{{ added }}'] as bigint), 0)
        {%- if removed %} - coalesce(cast({{ summary }}['{{ removed }}'] as bigint), 0){% endif -%}
        {{ " + " if not loop.last }}
    {%- endfor -%}
{% endmacro %}
