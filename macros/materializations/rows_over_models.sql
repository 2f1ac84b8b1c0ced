{#- The rows to merge of an incremental run of a model whose scope's changes are models of the
    kind (scope_model_changes: an aggregate, a mart over a fact): its select (`body`) for the
    keys in the run's scope only (scope_keys_cached: the keys its upstream models' runs changed
    since its last committed run; in a backfill those this invocation's runs changed, and the
    keys of the window's rows), and every row of the table of those keys: a key's rows are
    recomputed whole from its upstream tables, and a row of the table its select no longer gives
    (a group that lost all its rows) is deleted (rows_to_merge's `vanished`). A model with no
    event date has no window's rows: the keys that differ from its select when the backfill
    names it (restated_keys). The keys are
    literals when the key is the event date or a partition column and they are few (var
    merge_scope_literals_max): Spark pushes them through the select's grouping down to the
    upstream table's scan, where Iceberg prunes by them; other keys are the cached subquery.
    `plan`: the model's run_plan. -#}
{% macro rows_over_models(plan, body) %}
    {% set declared, scope = plan.declared, plan.scope %}
    {% set key = scope.key %}
    {#- a model maintained by deltas (additive): its daily run applies its upstream's changes
        since its mark (one statement finds them, or that there are none) -#}
    {% set deltas = backfill_safe.additive_deltas(plan, body) %}
    {% if deltas is not none %}
        {{ return(deltas) }}
    {% endif %}
    {#- nothing recorded upstream since its last run (one probe): no row to merge, and nothing
        cached or read to find it (guarded_merge_sql then stages nothing); a scope that names
        landed sources too was probed as a whole (nothing_landed_since_last_run) -#}
    {% if not (scope.direct or scope.through) and backfill_safe.nothing_changed_upstream(scope) %}
        {{ return("select *, false as _is_deleted from " ~ this ~ " where false") }}
    {% endif %}
    {% set keys = backfill_safe.scope_keys_cached() %}
    {% set window = plan.window %}
    {% set terms = [] %}
    {% if keys %}
        {#- as literals where they let Iceberg prune at planning (the event date, a partition
            column: a daily aggregate's dates); else the cached keys, which Spark joins below
            the select's grouping (a customer mart's customers: thousands of literals, parsed
            and optimized in every reference, cost more than the join; history.md) -#}
        {% set partitioned = config.get('partition_by') or [] %}
        {% set partition_columns = [partitioned] if partitioned is string else partitioned %}
        {% set literals = backfill_safe.scope_key_literals(keys)
            if key == declared.event_date or key in partition_columns else none %}
        {% do terms.append(key ~ " in (" ~ (literals or keys) ~ ")") %}
    {% endif %}
    {% if window is not none and not declared.event_date %}
        {#- no event date: restated by key, when the backfill names the model itself -#}
        {% set restated = backfill_safe.restated_keys(body, model.columns.keys() | list) %}
        {% if restated is not none %}
            {% do terms.append(declared.unique_key ~ " in (" ~ restated ~ ")") %}
        {% endif %}
    {% elif window is not none %}
        {#- the window's rows, and every row of a key the table holds in it (a row that moved
            out of the window is restated too) -#}
        {% set in_window = declared.event_date ~ " >= date'" ~ window.start ~ "' and "
            ~ declared.event_date ~ " < date'" ~ window.end ~ "'" %}
        {% do terms.append("(" ~ in_window ~ ")") %}
        {% do terms.append(key ~ " in (select " ~ key ~ " from " ~ this ~ " where "
            ~ in_window ~ ")") %}
    {% endif %}
    {% set predicate = ("(" ~ terms | join(" or ") ~ ")") if terms else none %}
    {{ return(backfill_safe.recomputed_rows(declared, body, predicate)) }}
{% endmacro %}


{#- The rows to merge of a model over models for the keys `predicate` holds for (a predicate
    on its columns, or none for every key), recomputed from its select (`body`, flagged_rows):
    every row of the table it holds for that the select no longer gives is deleted. -#}
{% macro recomputed_rows(declared, body, predicate) %}
    {% set changes = "(select * from (\n" ~ body ~ "\n) as current_state"
        ~ ((" where " ~ predicate) if predicate else "") ~ ")" %}
    {{ return(backfill_safe.rows_to_merge(none, changes, declared.unique_key,
        predicate, vanished=true)) }}
{% endmacro %}
