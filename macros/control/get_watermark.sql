{#- The stored high-water mark of a pipeline (a datetime), or none when the pipeline has never
    committed a load. Only reads; returns none at parse time. -#}
{% macro get_watermark(pipeline_name) %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% set result = run_query(
        "select watermark_ts from " ~ watermark_relation()
        ~ " where pipeline_name = '" ~ validated_identifier(pipeline_name) ~ "'"
    ) %}
    {% if result.rows | length == 0 %}
        {{ return(none) }}
    {% endif %}
    {{ return(result.rows[0][0]) }}
{% endmacro %}
