{#- The partition predicate of a run of a model with a declared scope, on `column` (its
    event_date): the dates of the event time of every version of every key in the run's scope
    (scope_keys_select; the scope's `event_time`, read from its cached versions), as literals, or none
    when every key is in scope or the model declares no scope. Every row the run writes,
    deletes or matches belongs to one of those keys, and its event date (the table's or the new
    one) is the date of one of their versions, so the predicate keeps the MERGE exact while
    Iceberg plans only those partitions' files: rows_to_merge's read of the table and the
    MERGE's ON clause (guarded_merge_sql) both take it. Literals, not a subquery: Iceberg
    prunes files at planning time only on predicates it is given as values. Called after
    scope_keys_cached made the run's cached views (by the select, after it, and by the MERGE). -#}
{% macro scope_event_dates(column) %}
    {% set plan = backfill_safe.run_plan() %}
    {% if not plan.incremental %}
        {{ return(none) }}
    {% endif %}
    {% set scope = plan.scope %}
    {% if scope is none %}
        {{ return(none) }}
    {% endif %}
    {% if scope.models %}
        {#- a scope over models: its keys are the event dates when the key is the event date
            (a daily aggregate), and only outside a backfill (whose window adds rows by date) -#}
        {% set keys = backfill_safe.scope_keys_cached() %}
        {% if keys is none or plan.window is not none or scope.key != plan.declared.event_date %}
            {{ return(none) }}
        {% endif %}
        {% set literals = backfill_safe.scope_key_literals(keys) %}
        {{ return((column ~ " in (" ~ literals ~ ")") if literals else none) }}
    {% endif %}
    {% if backfill_safe.scope_keys_select() is none %}
        {{ return(none) }}
    {% endif %}
    {% set event_time = scope.event.column %}
    {#- as text: the embedded engine returns dates, the Thrift Server strings -#}
    {#- memoized: the select and the MERGE both ask -#}
    {% set rows = backfill_safe.memoized_rows(
        "select distinct date_format(" ~ event_time ~ ", 'yyyy-MM-dd') as event_date from "
        ~ backfill_safe.versions_in_scope(scope.event.source_name, scope.event.table,
                            backfill_safe.scope_keys_cache_subquery(),
                            backfill_safe.scope_key_column(scope, scope.event))
        ~ " as versions where " ~ event_time ~ " is not null") %}
    {% set dates = [] %}
    {% for row in rows %}
        {% set text = row[0] | string %}
        {% if not modules.re.fullmatch('[0-9]{4}-[0-9]{2}-[0-9]{2}', text) %}
            {{ exceptions.raise_compiler_error(
                "model " ~ this ~ ": " ~ scope.event.source_name ~ "." ~ scope.event.table ~ "."
                ~ event_time ~ " gave an event date " ~ text) }}
        {% endif %}
        {% do dates.append("date'" ~ text ~ "'") %}
    {% endfor %}
    {% if dates | length == 0 %}
        {{ return("false") }}
    {% endif %}
    {{ return(column ~ " in (" ~ (dates | sort | join(", ")) ~ ")") }}
{% endmacro %}
