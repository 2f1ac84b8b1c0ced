{#- A model over models' select (`body`) as the table's `columns` plus `is_deleted`: the select's
    own `is_deleted` where it returns one, else false. A team's mart need not flag anything: a key
    in the run's scope that its select no longer returns is deleted (rows_over_models). One
    select, no statement: in the inner select list, `is_deleted` resolves to the select's column
    when it has one and otherwise to the literal aliased before it (Spark's lateral column alias,
    on by default since 3.4: spark.sql.lateralColumnAlias.enableImplicitResolution; a column of
    the select always wins over an alias). A table that documents `is_deleted` as a column of
    its own reads it as it is. -#}
{% macro flagged_rows(body, columns) %}
    {% if 'is_deleted' in columns | map('lower') | list %}
        {{ return("select * from (\n" ~ body ~ "\n) as model_rows") }}
    {% endif %}
    {% set listed = columns | join(", ") %}
    {{ return("select " ~ listed ~ ", _select_is_deleted as is_deleted from (select " ~ listed
        ~ ", false as is_deleted, is_deleted as _select_is_deleted from (\n" ~ body
        ~ "\n) as model_rows) as flagged_rows") }}
{% endmacro %}
