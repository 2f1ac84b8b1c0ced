{#- on-run-start: create the control schema, the watermark table (one row per pipeline =
    incremental model; see advance_watermark), the run records (see record_runs) and what the
    runs scanned (see record_scans) if they are missing, and add the newer columns of the
    watermark table and of run_scans to ones made before them. Nothing under
    backfill vars: a backfill never reads or moves the watermark, and the
    runner creates these tables when it starts (`dbt run-operation ensure_control_tables`). -#}
{% macro ensure_control_tables() %}
    {% if execute and backfill_safe.run_mode().window is none %}
        {#- a statement, not run_query: through a Thrift Server PyHive cannot fetch the empty
            result of DDL (TypeError in its _fetch_more) -#}
        {% call statement('create_control_schema') %}
            create schema if not exists {{ var('control_schema', 'control') }}
        {% endcall %}
        {% call statement('create_watermark_table') %}
            create table if not exists {{ backfill_safe.watermark_relation() }} (
                pipeline_name string,
                watermark_ts timestamp,
                previous_watermark_ts timestamp,
                invocation_id string,
                advanced_at timestamp,
                last_run_started_at timestamp
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
        {% call statement('create_run_scans') %}
            create table if not exists {{ var('control_schema', 'control') }}.run_scans (
                invocation_id string,
                model_name string,
                table_name string,
                branch string,
                role string,
                window_start date,
                window_end date,
                statements int,
                scans int,
                data_files_planned bigint,
                data_files_skipped bigint,
                largest_scan_files bigint,
                table_data_files bigint,
                data_manifests_scanned bigint,
                data_manifests_skipped bigint,
                bytes_planned bigint,
                splits_read bigint,
                rows_read bigint,
                delete_files_planned bigint,
                max_scan_share double,
                over_share boolean,
                filters string,
                started_at timestamp,
                recorded_at timestamp,
                partitions_planned bigint,
                partitions string
            )
            using iceberg
            tblproperties ('format-version' = '2')
        {% endcall %}
        {#- after every table is made: their columns are read from dbt's listing of the schema
            (column_names), which then holds all of them for the hooks that ask later.
            A watermark table made before last_run_started_at existed gets the column (null:
            its pipelines' next runs read their whole lookback, then record it) -#}
        {% set watermark_table = api.Relation.create(
            schema=var('control_schema', 'control'), identifier='etl_watermark', type='table') %}
        {% set watermark_columns = backfill_safe.column_names(watermark_table) %}
        {% if 'last_run_started_at' not in watermark_columns %}
            {% call statement('add_last_run_started_at') %}
                alter table {{ backfill_safe.watermark_relation() }} add columns (last_run_started_at timestamp)
            {% endcall %}
        {% endif %}
        {#- a run_scans made before its partition columns gets them (null in its older rows) -#}
        {% set scans_table = api.Relation.create(
            schema=var('control_schema', 'control'), identifier='run_scans', type='table') %}
        {% if 'partitions_planned' not in backfill_safe.column_names(scans_table) %}
            {% call statement('add_run_scans_partitions') %}
                alter table {{ scans_table }} add columns (partitions_planned bigint, partitions string)
            {% endcall %}
        {% endif %}
    {% endif %}
    {{ return('') }}
{% endmacro %}
