{#- Guard for names spliced into SQL text: letters, digits and underscores only. -#}
{% macro validated_identifier(name) %}
    {% if not modules.re.fullmatch('[A-Za-z_][A-Za-z0-9_]*', name | string) %}
        {{ exceptions.raise_compiler_error("not a valid identifier: '" ~ name ~ "'") }}
    {% endif %}
    {{ return(name) }}
{% endmacro %}
