{#- What a run of a model of the kind writes (`plan`: its run_plan), as one select over its body
    (`body`, the model's compiled select; a model over models' through flagged_rows, so it need
    not return is_deleted): on a full build the table's rows (`columns`, in order); on an
    incremental run the rows to merge, flagged `_is_deleted` (rows_to_merge). A fact's run is
    restricted to its scope here (scope_predicate, and with a declared scope the keys its
    changes reach, cached once: scope_keys_cached). -#}
{% macro kind_rows(plan, body, columns) %}
    {% set declared, full_build = plan.declared, plan.full_build %}
    {% if declared.dimension is not none %}
        {{ return(backfill_safe.dimension_rows(plan, body, columns)) }}
    {% endif %}
    {% if declared.reference %}
        {#- a reference table (declared_reference): every row, on every run; merged where new
            or different from the table -#}
        {% set live = "(select " ~ columns | join(", ") ~ " from (\n" ~ body
            ~ "\n) as reference_rows)" %}
        {{ return(("select * from " ~ live ~ " as live") if full_build
            else backfill_safe.rows_to_merge(live, none, declared.unique_key, none)) }}
    {% endif %}
    {#- its select as the table's columns plus is_deleted: for a model over models false where it
        returns none (a key it no longer returns is deleted: rows_over_models); a fact over
        landed sources only must return its own (missing_flag_error) -#}
    {% set over_models = declared.reads_models %}
    {% set body = backfill_safe.flagged_rows(body, columns,
        'false' if over_models else backfill_safe.missing_flag_error()) %}
    {% if full_build %}
        {{ return("select " ~ columns | join(", ") ~ " from (\n" ~ body
            ~ "\n) as current_state where not is_deleted") }}
    {% endif %}
    {% if over_models %}
        {{ return(backfill_safe.rows_over_models(plan, body)) }}
    {% endif %}
    {#- the keys first: caching them counts the rows awaiting a member, which the predicate
        reads -#}
    {% set keys = backfill_safe.scope_keys_cached() if declared.scope is not none else none %}
    {% set scope = backfill_safe.scope_predicate(plan) %}
    {% set filters = [] %}
    {% if keys %}
        {% do filters.append(declared.scope.key ~ " in (" ~ keys ~ ")") %}
    {% endif %}
    {% if scope %}
        {% do filters.append("(" ~ scope ~ ")") %}
    {% endif %}
    {% set changes = "(select * from (\n" ~ body ~ "\n) as current_state"
        ~ ((" where " ~ filters | join(" and ")) if filters else "") ~ ")" %}
    {{ return(backfill_safe.rows_to_merge(none, changes, declared.unique_key,
        backfill_safe.scope_existing_rows(keys))) }}
{% endmacro %}
