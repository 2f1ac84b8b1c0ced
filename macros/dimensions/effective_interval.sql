{% macro effective_interval(member_key, update_column='updated_at') -%}
    {#- A type-2 version's interval, as three select-list columns: valid_from (its update time),
        valid_to (the next version's update time, null for the latest), is_current. -#}
    {%- for name, value in [('member_key', member_key), ('update_column', update_column)] %}
        {%- if not backfill_safe.is_identifier(value) %}
            {{ exceptions.raise_compiler_error(
                "effective_interval in model " ~ model.name ~ ": " ~ name ~ " must be one column"
                ~ " name, got " ~ value) }}
        {%- endif %}
    {%- endfor %}
    {%- set next_version -%}
        lead({{ update_column }}) over (partition by {{ member_key }} order by {{ update_column }})
    {%- endset %}
    {{ update_column }} as valid_from,
    {{ next_version }} as valid_to,
    {{ next_version }} is null as is_current
{%- endmacro %}
