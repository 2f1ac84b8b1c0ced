{#- One entry of the current model's config `meta` (`default` when the model sets no meta or
    not this key): the one place the project's meta flags are read
    (stage_merge_source). -#}
{% macro model_meta(key, default=none) %}
    {% set meta = config.get('meta') or {} %}
    {{ return(meta.get(key, default)) }}
{% endmacro %}
