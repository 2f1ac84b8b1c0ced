{#- A pipeline's stored high-water mark (a datetime), or none when the pipeline has never
    committed a load. `column`: watermark_ts (the watermark itself) or last_run_started_at (when
    the pipeline's last committed run started: changed_versions_predicate). Only reads: one query
    of every pipeline's row per invocation (memoized_rows); returns none at parse time. -#}
{% macro get_watermark(pipeline_name, column='watermark_ts') %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% if column not in ('watermark_ts', 'last_run_started_at') %}
        {{ exceptions.raise_compiler_error(
            "get_watermark: column must be watermark_ts or last_run_started_at, got " ~ column) }}
    {% endif %}
    {#- one read of every pipeline's row per invocation (memoized_rows): each model's select,
        MERGE and post-hook ask for their own; commit_watermarks forgets it -#}
    {% set wanted = backfill_safe.validated_identifier(pipeline_name) %}
    {% set rows = backfill_safe.memoized_rows(
        "select pipeline_name, watermark_ts, last_run_started_at from "
        ~ backfill_safe.watermark_relation()) %}
    {% for row in rows if row[0] == wanted %}
        {{ return(row[1] if column == 'watermark_ts' else row[2]) }}
    {% endfor %}
    {{ return(none) }}
{% endmacro %}
