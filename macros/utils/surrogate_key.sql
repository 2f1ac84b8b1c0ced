{#- Deterministic surrogate key: md5 over the columns' string forms joined with a separator,
    nulls replaced by a sentinel (as dbt_utils.generate_surrogate_key does). The same inputs give
    the same key in every run, full refresh or incremental; never derived from row order.
    Timestamps are rendered in the session time zone, which the profile pins to UTC. -#}
{% macro surrogate_key(columns) -%}
    md5(concat_ws('-',
    {%- for column in columns %}
        coalesce(cast({{ column }} as string), '_null_'){{ "," if not loop.last }}
    {%- endfor %}
    ))
{%- endmacro %}
