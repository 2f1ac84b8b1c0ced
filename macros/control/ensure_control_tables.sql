{#- on-run-start: create the control schema and the watermark table if they are missing.
    One row per pipeline (= incremental model); see advance_watermark. -#}
{% macro ensure_control_tables() %}
    {% if execute %}
        {% do run_query("create schema if not exists " ~ var('control_schema', 'control')) %}
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
    {% endif %}
    {{ return('') }}
{% endmacro %}
