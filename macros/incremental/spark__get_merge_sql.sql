{#- dbt-spark dispatches its merge strategy here; the root project's version wins. -#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {{ return(guarded_merge_sql(target, source, unique_key, incremental_predicates)) }}
{% endmacro %}
