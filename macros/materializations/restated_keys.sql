{#- The keys a backfill window restates by key, for a model with no event date (a customer mart)
    named in var restate_by_key (the runner's: a model the backfill or restatement selects
    itself, in its first window): a select of the unique keys whose row in the table is not the
    row of its select (`body`, flagged_rows'), either way, every column of the table (`columns`)
    compared null-safe: those the audit lists, and any other that differs. One read of the
    select and the table, as the audit's; a model reached only through its upstream models'
    windows recomputes what their runs recorded instead (rows_over_models). Empty when the model
    is not named. -#}
{% macro restated_keys(body, columns) %}
    {% set named = var('restate_by_key', []) %}
    {% if named is string or named is mapping or named is not iterable %}
        {{ exceptions.raise_compiler_error("var restate_by_key: a list of model names; got "
            ~ named) }}
    {% endif %}
    {% if model.name not in named %}
        {{ return(none) }}
    {% endif %}
    {% set unique_key = backfill_safe.run_plan().declared.unique_key %}
    {{ return("select coalesce(given." ~ unique_key ~ ", held." ~ unique_key ~ ") from (select "
        ~ columns | join(", ") ~ " from (\n" ~ body ~ "\n) as selected where not is_deleted)"
        ~ " as given full outer join " ~ this ~ " as held on given." ~ unique_key ~ " = held."
        ~ unique_key ~ " where given." ~ unique_key ~ " is null or held." ~ unique_key
        ~ " is null or not " ~ backfill_safe.same_row('given', 'held', columns)) }}
{% endmacro %}
