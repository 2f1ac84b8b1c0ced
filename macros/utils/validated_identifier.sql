{#- Guard for names spliced into SQL text: letters, digits and underscores only. -#}
{% macro validated_identifier(name) %}
    {% if not backfill_safe.is_identifier(name | string) %}
        {{ exceptions.raise_compiler_error("not a valid identifier: '" ~ name ~ "'") }}
    {% endif %}
    {{ return(name) }}
{% endmacro %}
