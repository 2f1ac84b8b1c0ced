{#- A pipeline's stored high-water mark (a datetime), or none when the pipeline has never
    committed a load. `column`: watermark_ts (the watermark itself) or last_run_started_at (when
    the pipeline's last committed run started: changed_versions_predicate). Only reads; returns
    none at parse time. -#}
{% macro get_watermark(pipeline_name, column='watermark_ts') %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% if column not in ('watermark_ts', 'last_run_started_at') %}
        {{ exceptions.raise_compiler_error(
            "get_watermark: column must be watermark_ts or last_run_started_at, got " ~ column) }}
    {% endif %}
    {% set result = run_query(
        "select " ~ column ~ " from " ~ watermark_relation()
        ~ " where pipeline_name = '" ~ validated_identifier(pipeline_name) ~ "'"
    ) %}
    {% if result.rows | length == 0 %}
        {{ return(none) }}
    {% endif %}
    {{ return(result.rows[0][0]) }}
{% endmacro %}
