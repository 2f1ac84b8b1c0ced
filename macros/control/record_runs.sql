{#- on-run-end: one row per model run of this invocation in control.run_records (created by
    ensure_control_tables), failed runs included: the dbt invocation id, model, status, start
    and end of its execution, the backfill window (null here), the watermark before and after
    and its lag behind the clock, and, for a table that ran, the snapshots it committed during
    its execution with their summary figures (added/deleted records and data files, changed
    partitions; snapshots on any branch). Deleted records are the rows that left the table:
    the rows of rewritten files (copy-on-write) plus position and equality deletes
    (merge-on-read), as pipeline.iceberg.deleted_records counts them. Cost per invocation: one
    metadata query over the tables that ran and committed (a model of the kind whose main
    statement was idle, idle_runs, gets zeros unread: a write to its table by its own post-hook
    is not counted then), one read of the watermarks, one append of constant rows. A backfill's
    windows are recorded by the runner instead (`pipeline.backfill`), off their critical path:
    this renders nothing for a window of the runner's (var backfill_branch), nor for the scratch build of a dual-run
    comparison, nor for `pipeline explain` (var explain_next_run), nor for an invocation that
    ran no model of the framework's kind (is_framework_model: a run of plain dbt models only).
    Snapshot figures are read for Iceberg tables only. A plain `dbt run --vars '{backfill_start:
    ..., backfill_end: ...}'` (a backfill by hand: no branch, no gate, the watermark left where
    it was) is recorded like a daily run, with its window in window_start and window_end. -#}
{% macro record_runs(results) %}
    {% set window = backfill_safe.run_mode().window if execute else none %}
    {% if not execute or (window is not none and var('backfill_branch', none) is not none)
        or backfill_safe.run_mode().dual_run_model is not none or backfill_safe.run_mode().explaining %}
        {{ return('') }}
    {% endif %}
    {% set runs = results | selectattr('node.resource_type', 'equalto', 'model') | list %}
    {#- a run of plain dbt models only records nothing (the control tables may not exist) -#}
    {% set framework_runs = [] %}
    {% for run in runs if backfill_safe.is_framework_model(run.node) %}
        {% do framework_runs.append(run) %}
    {% endfor %}
    {% if framework_runs | length == 0 %}
        {{ return('') }}
    {% endif %}
    {#- 1. the snapshot figures of every table that ran, in one metadata query -#}
    {% set timings = {} %}
    {% set figure_queries = [] %}
    {% for run in runs %}
        {% set execute_timing = run.timing | selectattr('name', 'equalto', 'execute') | list %}
        {% set timing = execute_timing[0] if execute_timing else none %}
        {% if timing and timing.started_at and timing.completed_at %}
            {% do timings.update({run.node.unique_id: timing}) %}
            {#- Iceberg tables only (their snapshots tell what the run committed) -#}
            {% set is_table = run.node.config.materialized
                in ('incremental', 'table', 'backfill_safe')
                and run.node.config.file_format == 'iceberg' %}
            {#- a run of the kind that sent only its idle statement committed nothing -#}
            {% if run.status == 'success' and is_table
                and run.node.unique_id not in backfill_safe.idle_runs() %}
                {% do figure_queries.append(
                    "select '" ~ backfill_safe.validated_identifier(run.node.name) ~ "' as model_name, count(*),"
                    ~ " sum(cast(summary['added-records'] as bigint)),"
                    ~ " sum(" ~ backfill_safe.deleted_records_figure('summary') ~ "),"
                    ~ " sum(cast(summary['added-data-files'] as bigint)),"
                    ~ " sum(cast(summary['deleted-data-files'] as bigint)),"
                    ~ " sum(cast(summary['changed-partition-count'] as bigint))"
                    ~ " from " ~ run.node.schema ~ "." ~ run.node.alias ~ ".snapshots"
                    ~ " where committed_at between " ~ backfill_safe.timestamp_literal(timing.started_at)
                    ~ " and " ~ backfill_safe.timestamp_literal(timing.completed_at)) %}
            {% endif %}
        {% endif %}
    {% endfor %}
    {% set figures = {} %}
    {% if figure_queries %}
        {% for row in run_query(figure_queries | join(' union all ')).rows %}
            {% do figures.update({row[0]: row}) %}
        {% endfor %}
    {% endif %}
    {#- 2. the watermarks, as the run left them -#}
    {% set watermarks = {} %}
    {% set watermark_query = "select pipeline_name, watermark_ts, previous_watermark_ts,"
        ~ " invocation_id from " ~ backfill_safe.watermark_relation() %}
    {% for row in run_query(watermark_query).rows %}
        {% do watermarks.update({row[0]: row}) %}
    {% endfor %}
    {#- 3. one append: the runs as one inline table of literals (its analysis does not grow
        like a union of one select per model), the lag and the time recorded computed once -#}
    {% set rows = [] %}
    {% for run in runs %}
        {% set node = run.node %}
        {% set timing = timings.get(node.unique_id) %}
        {% set figure = figures.get(node.name) %}
        {% set watermark = watermarks.get(node.name) %}
        {% set after = watermark[1] if watermark else none %}
        {% set before = (watermark[2] if watermark[3] == invocation_id else watermark[1])
            if watermark else none %}
        {% set message = (run.message or '') | string | truncate(1000)
            | replace('\\', '\\\\') | replace("'", "\\'") %}
        {% set null_ts = 'cast(null as timestamp)' %}
        {% set values = [
            "'" ~ backfill_safe.validated_identifier(node.name) ~ "'",
            "'" ~ node.schema ~ "." ~ node.alias ~ "'",
            "'" ~ run.status ~ "'",
            backfill_safe.timestamp_literal(timing.started_at) if timing else null_ts,
            backfill_safe.timestamp_literal(timing.completed_at) if timing else null_ts,
            backfill_safe.timestamp_literal(before) if before else null_ts,
            backfill_safe.timestamp_literal(after) if after else null_ts,
            (figure[1] if figure else 0) | int] %}
        {% for position in range(2, 7) %}
            {% set figured = ((figure[position] or 0) if figure else 0) | int %}
            {% do values.append('cast(' ~ figured ~ ' as bigint)') %}
        {% endfor %}
        {% do values.append("'" ~ message ~ "'") %}
        {% do rows.append('(' ~ values | join(', ') ~ ')') %}
    {% endfor %}
    insert into {{ var('control_schema', 'control') }}.run_records
    select
        '{{ invocation_id }}', model_name, relation_name, status, started_at, finished_at,
        {{ ("date'" ~ window.start ~ "'") if window else 'cast(null as date)' }},
        {{ ("date'" ~ window.end ~ "'") if window else 'cast(null as date)' }},
        watermark_before, watermark_after,
        unix_timestamp(current_timestamp()) - unix_timestamp(watermark_after),
        snapshots_committed, added_records, deleted_records, added_files, removed_files,
        changed_partitions, message, current_timestamp()
    from values
        {{ rows | join(',\n        ') }}
    as runs (model_name, relation_name, status, started_at, finished_at, watermark_before,
        watermark_after, snapshots_committed, added_records, deleted_records, added_files,
        removed_files, changed_partitions, message)
{% endmacro %}
