{#- on-run-start: create the control schema, the watermark table (one row per pipeline =
    incremental model; see advance_watermark) and the run records (see record_runs) if they are
    missing. Nothing under backfill vars: a backfill never reads or moves the watermark, and the
    runner creates these tables when it starts (`dbt run-operation ensure_control_tables`). -#}
{% macro ensure_control_tables() %}
    {% if execute and backfill_window() is none %}
        {#- a statement, not run_query: through a Thrift Server PyHive cannot fetch the empty
            result of DDL (TypeError in its _fetch_more) -#}
        {% call statement('create_control_schema') %}
            create schema if not exists {{ var('control_schema', 'control') }}
        {% endcall %}
        {% call statement('create_watermark_table') %}
            create table if not exists {{ watermark_relation() }} (
                pipeline_name string,
                watermark_ts timestamp,
                previous_watermark_ts timestamp,
                invocation_id string,
                advanced_at timestamp
            )
            using iceberg
            tblproperties ('format-version' = '2')
        {% endcall %}
        {% call statement('create_run_records') %}
            create table if not exists {{ var('control_schema', 'control') }}.run_records (
                invocation_id string,
                model_name string,
                relation_name string,
                status string,
                started_at timestamp,
                finished_at timestamp,
                window_start date,
                window_end date,
                watermark_before timestamp,
                watermark_after timestamp,
                watermark_lag_seconds bigint,
                snapshots_committed int,
                added_records bigint,
                deleted_records bigint,
                added_files bigint,
                removed_files bigint,
                changed_partitions bigint,
                message string,
                recorded_at timestamp
            )
            using iceberg
            tblproperties ('format-version' = '2')
        {% endcall %}
    {% endif %}
    {{ return('') }}
{% endmacro %}
