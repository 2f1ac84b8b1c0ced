{#- dbt-spark dispatches its merge strategy here; the root project's version wins. A model of the
    framework's kind (is_framework_model: its select ends with merge_source()) gets
    guarded_merge_sql; every other merge model gets dbt-spark's own MERGE, unchanged (the
    benchmark's naive baseline, a team's plain models). -#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {% if not backfill_safe.is_framework_model() %}
        {{ return(dbt.spark__get_merge_sql(
            target, source, unique_key, dest_columns, incremental_predicates)) }}
    {% endif %}
    {{ return(backfill_safe.guarded_merge_sql(
        target, source, unique_key, incremental_predicates)) }}
{% endmacro %}
