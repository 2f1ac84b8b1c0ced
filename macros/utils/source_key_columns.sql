{#- The business key columns of a landed raw table, as its source declares them
    (landing_contract: config.meta.backfill_safe.unique_key). -#}
{% macro source_key_columns(source_name, table) %}
    {{ return(backfill_safe.landing_contract(source_name, table).unique_key) }}
{%- endmacro %}
