{#- dbt-spark dispatches its merge strategy here; the root project's version wins. A model
    configured `merge_sql: dbt_spark` gets dbt-spark's own MERGE instead (only the benchmark's
    naive baseline, models/bench/, which is disabled unless var bench_baselines is true). -#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {% if config.get('merge_sql') == 'dbt_spark' %}
        {{ return(dbt.spark__get_merge_sql(
            target, source, unique_key, dest_columns, incremental_predicates)) }}
    {% endif %}
    {{ return(guarded_merge_sql(target, source, unique_key, incremental_predicates)) }}
{% endmacro %}
