{#- A model over models' select (`body`) as the table's `columns` plus `is_deleted`: the select's
    own `is_deleted` where it returns one, else false. A team's mart need not flag anything: a key
    in the run's scope that its select no longer returns is deleted (rows_over_models). One
    select, no statement: in the inner select list, `is_deleted` resolves to the select's column
    when it has one and otherwise to the literal aliased before it (Spark's lateral column alias,
    on by default since 3.4: spark.sql.lateralColumnAlias.enableImplicitResolution; a column of
    the select always wins over an alias). A table that documents `is_deleted` as a column of
    its own reads it as it is.
    `missing`: the SQL expression that stands for the flag when the select has none; left
    out, false. A fact over landed sources only must return its own (its run's scope is the
    rows updated since its watermark less lookback, not a set of keys, so a key its select no
    longer returns cannot be taken as deleted): kind_rows gives it missing_flag_error(), which
    fails the run with a message naming the model, as soon as a row lacks the flag. -#}
{% macro flagged_rows(body, columns, missing='false') %}
    {% if 'is_deleted' in columns | map('lower') | list %}
        {{ return("select * from (\n" ~ body ~ "\n) as model_rows") }}
    {% endif %}
    {% set listed = columns | join(", ") %}
    {{ return("select " ~ listed ~ ", _select_is_deleted as is_deleted from (select " ~ listed
        ~ ", " ~ missing ~ " as is_deleted, is_deleted as _select_is_deleted from (\n" ~ body
        ~ "\n) as model_rows) as flagged_rows") }}
{% endmacro %}

{#- What a fact over landed sources only reads as its flag when its select returns no
    `is_deleted` (flagged_rows' `missing`): an error naming the model, its file and the fix,
    raised by Spark as the first row is read (a select with the column never evaluates it: the
    column wins, and the unused expression is pruned). -#}
{% macro missing_flag_error() %}
    {% set message = "model " ~ model.name ~ " (" ~ model.original_file_path ~ "): its select "
        ~ "returns no is_deleted column. A model of the kind over landed sources only flags its "
        ~ "deleted rows itself (is_deleted, a boolean: true for a row that must leave the "
        ~ "table), since its run reads the rows updated since its watermark, not a set of keys; "
        ~ "a model whose scope names models of the kind need not "
        ~ "(docs/reference/configuration.md)" %}
    {{ return("cast(raise_error('" ~ message | replace("'", "") | replace("\\", "")
        ~ "') as boolean)") }}
{% endmacro %}
