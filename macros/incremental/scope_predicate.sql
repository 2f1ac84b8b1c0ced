{#- The predicate that limits a run to its scope, or none when every row is in scope.
    - Daily run: `updated_at > <watermark - lookback>` (the plan's lower_bound, rule 1), plus
      the rows the table holds for which its scope's `awaiting` (a predicate on the table's
      columns) is true:
      rows that point to a dimension's unknown member (their customer or product had not
      arrived), re-evaluated every run, so they are re-keyed once it does, however old its own
      updated_at; left out when the run's scope keys found no such row.
    - Backfill (vars backfill_start/backfill_end): the rows whose event date is in the window,
      plus the rows the table holds in that window (so a row that moved out of it is restated
      too); the same models, macros and MERGE as the daily run. A model without an event date
      (a dimension) is restated whole in a backfill: the MERGE still writes only changed rows.
    - Full build / full refresh: none.
    `plan`: the model's run_plan (its declaration's event date, unique key and lookback). -#}
{% macro scope_predicate(plan) %}
    {% set declared = plan.declared %}
    {% if plan.window is not none and plan.incremental %}
        {% if declared.event_date is none %}
            {{ return(none) }}
        {% endif %}
        {% set in_window = declared.event_date ~ " >= date'" ~ plan.window.start ~ "' and "
            ~ declared.event_date ~ " < date'" ~ plan.window.end ~ "'" %}
        {{ return("(" ~ in_window ~ ") or " ~ declared.unique_key ~ " in (select "
            ~ declared.unique_key ~ " from " ~ this ~ " where " ~ in_window ~ ")") }}
    {% endif %}
    {% if plan.lower_bound is none %}
        {{ return(none) }}
    {% endif %}
    {#- no row of the table awaits a member (counted as the run's scope keys were cached:
        scope_keys_cache): nothing for the term to add, and its read of the table is left out -#}
    {% set awaiting = plan.scope.awaiting if plan.scope is not none else none %}
    {% if awaiting is none
        or backfill_safe.invocation_store('awaiting_rows').get(this.identifier) == 0 %}
        {{ return("updated_at > " ~ plan.lower_bound) }}
    {% endif %}
    {{ return("updated_at > " ~ plan.lower_bound ~ " or " ~ declared.unique_key ~ " in (select "
        ~ declared.unique_key ~ " from " ~ this ~ " where " ~ awaiting ~ ")") }}
{% endmacro %}
