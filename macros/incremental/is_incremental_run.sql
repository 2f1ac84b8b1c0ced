{#- True when this run of the model merges into its table: dbt's is_incremental() for a model
    materialized `incremental` (the kind written the old way, a team's plain models), and for a
    model materialized `backfill_safe` the same test dbt makes (its table exists, is a table,
    and the run is no full refresh): dbt's is_incremental() answers false for every
    materialization but its own. False while dbt parses. -#}
{% macro is_incremental_run() %}
    {% if not execute or model is none or model.config is not defined %}
        {{ return(false) }}
    {% endif %}
    {% if model.config.materialized != 'backfill_safe' %}
        {{ return(is_incremental()) }}
    {% endif %}
    {% set relation = adapter.get_relation(this.database, this.schema, this.table) %}
    {{ return(relation is not none and relation.type == 'table' and not should_full_refresh()) }}
{% endmacro %}
