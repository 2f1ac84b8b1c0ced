{#- on-run-end: one row per model run of this invocation in control.run_records (created here if
    missing: ensure_control_tables), failed runs included: the dbt invocation id, model, status, start and end of its
    execution, the backfill window if any, the watermark before and after, and, for Iceberg
    tables, the figures of the snapshots it committed (added/deleted records and files, changed
    partitions, from the snapshot summaries, on any branch), plus the watermark's lag behind the
    clock. One insert for the whole invocation. A backfill's windows are recorded by the
    runner instead (`pipeline.backfill`), off its critical path: this renders nothing under
    backfill vars, and for the scratch build of a dual-run comparison. -#}
{% macro record_runs(results) %}
    {% if not execute or backfill_window() is not none or var('dual_run_model', none) is not none %}
        {{ return('') }}
    {% endif %}
    {% set runs = results | selectattr('node.resource_type', 'equalto', 'model') | list %}
    {% if runs | length == 0 %}
        {{ return('') }}
    {% endif %}
    {% set selects = [] %}
    {% for run in runs %}
        {% set node = run.node %}
        {% set execute_timing = run.timing | selectattr('name', 'equalto', 'execute') | list %}
        {% set started = execute_timing[0].started_at if execute_timing else none %}
        {% set finished = execute_timing[0].completed_at if execute_timing else none %}
        {% set is_table = node.config.materialized in ('incremental', 'table', 'seed')
            and adapter.get_relation(node.database, node.schema, node.alias) is not none %}
        {% set relation = node.schema ~ '.' ~ node.alias %}
        {% set sql %}
        select
            '{{ invocation_id }}' as invocation_id,
            '{{ validated_identifier(node.name) }}' as model_name,
            '{{ relation }}' as relation_name,
            '{{ run.status }}' as status,
            {{ timestamp_literal(started) if started else 'cast(null as timestamp)' }} as started_at,
            {{ timestamp_literal(finished) if finished else 'cast(null as timestamp)' }} as finished_at,
            cast(null as date) as window_start,
            cast(null as date) as window_end,
            {%- if is_table and started and finished %}
            snapshot_totals.*,
            {%- else %}
            0 as snapshots_committed,
            cast(0 as bigint) as added_records,
            cast(0 as bigint) as deleted_records,
            cast(0 as bigint) as added_files,
            cast(0 as bigint) as removed_files,
            cast(0 as bigint) as changed_partitions,
            {%- endif %}
            '{{ (run.message or '') | string | truncate(1000) | replace('\\', '\\\\') | replace("'", "\\'") }}'
                as message
        {%- if is_table and started and finished %}
        from (
            select
                cast(count(*) as int) as snapshots_committed,
                coalesce(sum(cast(summary['added-records'] as bigint)), 0) as added_records,
                coalesce(sum(cast(summary['deleted-records'] as bigint)), 0) as deleted_records,
                coalesce(sum(cast(summary['added-data-files'] as bigint)), 0) as added_files,
                coalesce(sum(cast(summary['deleted-data-files'] as bigint)), 0) as removed_files,
                coalesce(sum(cast(summary['changed-partition-count'] as bigint)), 0)
                    as changed_partitions
            from {{ relation }}.snapshots
            where committed_at between {{ timestamp_literal(started) }} and {{ timestamp_literal(finished) }}
        ) as snapshot_totals
        {%- endif %}
        {% endset %}
        {% do selects.append(sql) %}
    {% endfor %}
    insert into {{ var('control_schema', 'control') }}.run_records
    select
        runs.invocation_id,
        runs.model_name,
        runs.relation_name,
        runs.status,
        runs.started_at,
        runs.finished_at,
        runs.window_start,
        runs.window_end,
        case
            when watermarks.invocation_id = runs.invocation_id then watermarks.previous_watermark_ts
            else watermarks.watermark_ts
        end as watermark_before,
        watermarks.watermark_ts as watermark_after,
        unix_timestamp(current_timestamp()) - unix_timestamp(watermarks.watermark_ts)
            as watermark_lag_seconds,
        runs.snapshots_committed,
        runs.added_records,
        runs.deleted_records,
        runs.added_files,
        runs.removed_files,
        runs.changed_partitions,
        runs.message,
        current_timestamp() as recorded_at
    from (
        {{ selects | join('\n        union all\n') }}
    ) as runs
    left join {{ watermark_relation() }} as watermarks
        on runs.model_name = watermarks.pipeline_name
{% endmacro %}
