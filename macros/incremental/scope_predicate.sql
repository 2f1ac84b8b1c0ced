{#- The predicate that limits a run to its scope, or none when every row is in scope.
    - Daily run: `updated_at > <watermark - lookback>` (incremental_lower_bound, rule 1), plus
      the rows the table holds for which `awaiting` (a predicate on the table's columns) is true:
      rows that point to a dimension's unknown member (their customer or product had not
      arrived), re-evaluated every run, so they are re-keyed once it does, however old its own
      updated_at; left out when the run's scope keys found no such row.
    - Backfill (vars backfill_start/backfill_end): the rows whose event date is in the window,
      plus the rows the table holds in that window (so a row that moved out of it is restated
      too); the same models, macros and MERGE as the daily run. A model without an event date
      (a dimension) is restated whole in a backfill: the MERGE still writes only changed rows.
    - Full build / full refresh: none. -#}
{% macro scope_predicate(domain, event_date_column=none, unique_key=none, awaiting=none) %}
    {#- a declared model's lookback lives in two places: its declaration (the scope keys, the
        audit) and this argument (the select's filter); two windows would make the audit and
        the run disagree on what they cover (a domain and its days are the same window) -#}
    {% set declared = ((model.config.meta or {}).get('backfill_safe') or {}).get('lookback')
        if execute and model is not none and model.config is defined else none %}
    {% if declared is not none and declared != domain
        and backfill_safe.lookback_days(declared) != backfill_safe.lookback_days(domain) %}
        {{ exceptions.raise_compiler_error(
            "model " ~ model.name ~ " (" ~ model.original_file_path ~ "): scope_predicate("
            ~ domain ~ ") and config.meta.backfill_safe.lookback (" ~ declared ~ ") name "
            ~ "different lookbacks; the declaration drives the scope keys and the audit, the "
            ~ "argument the select's filter: give both the same value") }}
    {% endif %}
    {% set window = backfill_safe.run_mode().window %}
    {% if window is not none and backfill_safe.is_incremental_run() %}
        {% if event_date_column is none %}
            {{ return(none) }}
        {% endif %}
        {% set in_window = event_date_column ~ " >= date'" ~ window.start ~ "' and "
            ~ event_date_column ~ " < date'" ~ window.end ~ "'" %}
        {{ return("(" ~ in_window ~ ") or " ~ unique_key ~ " in (select " ~ unique_key
            ~ " from " ~ this ~ " where " ~ in_window ~ ")") }}
    {% endif %}
    {% set lower_bound = backfill_safe.incremental_lower_bound(domain) %}
    {% if lower_bound is none %}
        {{ return(none) }}
    {% endif %}
    {#- no row of the table awaits a member (counted as the run's scope keys were cached:
        scope_keys_cache): nothing for the term to add, and its read of the table is left out -#}
    {% if awaiting is none
        or backfill_safe.invocation_store('awaiting_rows').get(this.identifier) == 0 %}
        {{ return("updated_at > " ~ lower_bound) }}
    {% endif %}
    {{ return("updated_at > " ~ lower_bound ~ " or " ~ unique_key ~ " in (select " ~ unique_key
        ~ " from " ~ this ~ " where " ~ awaiting ~ ")") }}
{% endmacro %}
