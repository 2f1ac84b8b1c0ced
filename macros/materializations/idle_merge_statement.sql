{#- The main statement of an incremental run of a model of the kind whose inputs landed nothing
    since its last run (nothing_landed_since_last_run; for a model over models, its upstream
    models recorded no change): a select that reads and writes nothing, or none when the run
    has something to do. The materialization asks first, before anything else of the run: no
    scope is computed or cached, no select analysed, no describe, nothing staged or merged
    (docs/benchmarks/history.md). The check of the select's columns and types against
    the table waits for the next run that has rows to merge: this one writes nothing. Under
    `pipeline explain` it says so. -#}
{% macro idle_merge_statement() %}
    {% if not backfill_safe.nothing_landed_since_last_run() %}
        {{ return(none) }}
    {% endif %}
    {% if backfill_safe.run_plan().explaining %}
        {% do backfill_safe.explain_statement('merge', none,
            'its upstream models recorded no change since its last run: it stages nothing, '
            ~ 'merges nothing; what their own next runs change (explain them) is its scope then'
            if backfill_safe.run_plan().declared.reads_models else
            'nothing landed in its inputs since its last run: it stages nothing, merges nothing') %}
    {% endif %}
    {{ return("select 'nothing to merge' as merge_skipped") }}
{% endmacro %}


{#- The main statement of an incremental run of a reference table (declared_reference) whose
    rows to merge (`rows`, from kind_rows) are none: a select that reads and writes nothing, or
    none when there are rows. Its select is small and cheap to evaluate twice, so it is probed
    before anything is staged: on most days it has no row, and neither a scratch table nor a
    MERGE is needed. -#}
{% macro idle_reference_statement(rows) %}
    {% if run_query("select 1 from (" ~ rows ~ ") as reference_rows limit 1").rows | length > 0 %}
        {{ return(none) }}
    {% endif %}
    {% if backfill_safe.run_plan().explaining %}
        {% do backfill_safe.explain_statement('merge', none,
            'its select has no row: no MERGE runs') %}
    {% endif %}
    {{ return("select 'nothing to merge' as merge_skipped") }}
{% endmacro %}


{#- The models of the kind whose run in this invocation sent an idle main statement
    (idle_merge_statement, idle_reference_statement) and so committed nothing: unique_id ->
    true, in invocation_store('idle_runs'). record_runs reads no snapshot of their tables. -#}
{% macro idle_runs() %}
    {{ return(backfill_safe.invocation_store('idle_runs')) }}
{% endmacro %}
