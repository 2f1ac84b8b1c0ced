{#- dbt's incremental materialization compares the select (a temporary view) with the table when
    on_schema_change is not `ignore`: `fail` stops the run on any difference, and dbt allows a
    model contract on an incremental model only with `fail` or `append_new_columns`. The select
    of a model of the framework's kind (is_framework_model) carries one column the table has not:
    `_is_deleted`, the flag rows_to_merge sends and guarded_merge_sql turns into DELETE, never
    written. This check leaves that flag out and compares the rest as dbt does (names, then data
    types), so a framework model can declare `on_schema_change: fail` and an enforced contract:
    its columns and types are checked when its table is created (the contract) and on every
    incremental run (here). Every other model gets dbt's check unchanged. -#}
{% macro spark__check_for_schema_changes(source_relation, target_relation) %}
    {% set changes = dbt.default__check_for_schema_changes(source_relation, target_relation) %}
    {% if not backfill_safe.is_framework_model() %}
        {{ return(changes) }}
    {% endif %}
    {% set flag = '_is_deleted' %}
    {% set source_columns = changes.source_columns | rejectattr('name', 'equalto', flag) | list %}
    {% set source_not_in_target = changes.source_not_in_target
        | rejectattr('name', 'equalto', flag) | list %}
    {% set schema_changed = (source_not_in_target | length > 0)
        or (changes.target_not_in_source | length > 0)
        or (changes.new_target_types | length > 0) %}
    {% do changes.update({
        'source_column_names': changes.source_columns | map(attribute='name') | list,
        'schema_changed': schema_changed,
        'source_not_in_target': source_not_in_target,
        'source_columns': source_columns}) %}
    {{ return(changes) }}
{% endmacro %}
