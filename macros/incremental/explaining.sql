{#- `pipeline explain`: var `explain_next_run: true` turns a `dbt run` of framework models into
    a plan of their next run that writes nothing to them. Each model compiles as its run would
    (the watermark, the lookback, its scope's keys and event dates, all read for real), its
    select is staged to scratch as the run stages it, and then, instead of the MERGE,
    guarded_merge_sql plans (explain_statement) the select and the MERGE it would run and
    returns a select that writes nothing. The watermark does not move (advance_watermark) and no
    run is recorded (record_runs, record_scans). False, or a clear error for anything but a
    boolean. -#}
{% macro explaining() %}
    {% set value = var('explain_next_run', false) %}
    {% if value is not boolean %}
        {{ exceptions.raise_compiler_error(
            "var explain_next_run: true or false, not '" ~ value ~ "'") }}
    {% endif %}
    {{ return(value) }}
{% endmacro %}

{#- One statement of this model's next run, planned and not run (backfill_safe.ScanPlan: the
    data files, delete files and partitions Iceberg plans for each scan under the filters pushed
    to it), written to dbt's log as one line `backfill_safe explain <json>` that `pipeline
    explain` collects: {model, statement, detail, plan}. With `sql` none, the line says why the
    run has no such statement (`detail`). -#}
{% macro explain_statement(statement_name, sql, detail=none) %}
    {% set plan = none %}
    {% if sql is not none %}
        {% set literal = sql | replace('\\', '\\\\') | replace("'", "\\'") %}
        {% set rows = run_query("select java_method('backfill_safe.ScanPlan', 'of', '"
            ~ literal ~ "') as plan from values (1)").rows %}
        {% set plan = fromjson(rows[0][0] | string) %}
        {% if plan.get('error') %}
            {{ exceptions.raise_compiler_error(
                "model " ~ this ~ ": its " ~ statement_name ~ " could not be planned: "
                ~ plan['error']) }}
        {% endif %}
    {% endif %}
    {% do log("backfill_safe explain " ~ tojson({'model': model.name, 'relation': this | string,
        'statement': statement_name, 'detail': detail, 'plan': plan}), info=true) %}
{% endmacro %}
