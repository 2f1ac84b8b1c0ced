{#- The versions of landed table `source_name`.`table` a staging reads, as a relation: every
    version (keys_in none); the run's cached versions (scope_keys_cached made them as the select
    began to compile) when the table is a direct source of the model's declared scope and
    keys_in is the run's cached scope (scope_keys_cache_subquery), or a lookup and keys_in
    selects its column from the cached versions of the source that names it, so the select's
    references to them read memory, not the landed table again; else the versions whose
    `key_column` is in keys_in. -#}
{% macro versions_in_scope(source_name, table, keys_in=none, key_column=none) %}
    {% if not keys_in %}
        {{ return(source(source_name, table)) }}
    {% endif %}
    {% set scope = backfill_safe.run_plan().scope if execute else none %}
    {% set name = source_name ~ '.' ~ table %}
    {% set column = key_column or (scope.key_columns.get(name, scope.key) if scope else none) %}
    {% if column is none %}
        {{ exceptions.raise_compiler_error("versions_in_scope(" ~ name ~ "): key_column is "
            ~ "required for a model that declares no scope") }}
    {% endif %}
    {% if scope %}
        {% if name in scope.key_columns and column == scope.key_columns[name]
            and keys_in == backfill_safe.scope_keys_cache_subquery() %}
            {{ return(backfill_safe.scope_versions_relation(source_name, table)) }}
        {% endif %}
        {% for lookup in scope.lookups if lookup.name == name and column == lookup.on %}
            {% if keys_in == 'select ' ~ lookup.on ~ ' from '
                    ~ backfill_safe.scope_versions_relation(
                        lookup.named_by.source_name, lookup.named_by.table) %}
                {{ return(backfill_safe.scope_versions_relation(source_name, table)) }}
            {% endif %}
        {% endfor %}
    {% endif %}
    {{ return("(select * from " ~ source(source_name, table) ~ " where " ~ column ~ " in ("
        ~ keys_in ~ "))") }}
{% endmacro %}
