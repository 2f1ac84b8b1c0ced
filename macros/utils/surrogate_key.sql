{#- Deterministic surrogate key: md5 over the columns' string forms joined with a separator,
    nulls replaced by a sentinel (as dbt_utils.generate_surrogate_key does). The same inputs give
    the same key in every run, full refresh or incremental; never derived from row order. -#}
{% macro surrogate_key(columns) -%}
    {{ return(adapter.dispatch('surrogate_key', 'backfill_safe')(columns)) }}
{%- endmacro %}

{% macro default__surrogate_key(columns) -%}
    md5(concat_ws('-',
    {%- for column in columns %}
        coalesce(cast({{ column }} as string), '_null_'){{ "," if not loop.last }}
    {%- endfor %}
    ))
{%- endmacro %}
