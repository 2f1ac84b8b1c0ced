{#- A pipeline's stored high-water mark (a datetime), or none when the pipeline has never
    committed a load. `column`: watermark_ts (the watermark itself) or last_run_started_at (when
    the pipeline's last committed run started: changed_versions_predicate). Only reads, once per
    invocation (memoized_rows); returns none at parse time. -#}
{% macro get_watermark(pipeline_name, column='watermark_ts') %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% if column not in ('watermark_ts', 'last_run_started_at') %}
        {{ exceptions.raise_compiler_error(
            "get_watermark: column must be watermark_ts or last_run_started_at, got " ~ column) }}
    {% endif %}
    {#- memoized: a model's select, MERGE and post-hook all ask; commit_watermarks forgets -#}
    {% set rows = backfill_safe.memoized_rows(
        "select " ~ column ~ " from " ~ backfill_safe.watermark_relation()
        ~ " where pipeline_name = '" ~ backfill_safe.validated_identifier(pipeline_name) ~ "'"
    ) %}
    {% if rows | length == 0 %}
        {{ return(none) }}
    {% endif %}
    {{ return(rows[0][0]) }}
{% endmacro %}
