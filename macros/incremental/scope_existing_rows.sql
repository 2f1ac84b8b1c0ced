{#- The table's rows a run of a model with a declared scope can match, as a predicate for
    rows_to_merge's read of the table (`existing`): the run's event dates (scope_event_dates on
    the model's declared event_date: Iceberg plans only those partitions' files) and its keys
    (`keys`, the cached subquery scope_keys_cached returned: every row of the run's
    current state belongs to one of them, and a row's unique key determines its scope key). The
    keys filter the rows read by a broadcast semi-join before they are joined to the current
    state: the dates alone kept every row of the touched partitions, about half the shop's
    table on a day of corrections, and shuffled them all into the join. None when every key is
    in scope. -#}
{% macro scope_existing_rows(keys) %}
    {% if not keys %}
        {{ return(none) }}
    {% endif %}
    {% set plan = backfill_safe.run_plan() %}
    {% set scope = plan.scope %}
    {% set dates = backfill_safe.scope_event_dates(plan.declared.event_date) %}
    {{ return(("(" ~ dates ~ ") and " if dates else "") ~ scope.key ~ " in (" ~ keys ~ ")") }}
{% endmacro %}
