{#- The staging of one landed raw table (`source_name`.`table`), as one select without CTEs
    (so a model can inline it): the
    source's versions, restricted to the keys `keys_in` when given (a SQL subquery returning
    the key column; none: every key), screened (screened_versions: quarantined versions left
    out) and reduced to one row per `key_columns` (latest_version). Every version of a key in
    scope is read, so a key's row is the same as with no restriction: a daily run restricts the
    staging to the keys its changes reach, before the windows, instead of ranking the whole
    history and filtering after (the restriction is on the source's columns, so Iceberg prunes
    by them and Spark ranks only those keys). The staging models and the intermediate macros
    are built on it. -#}
{% macro staged_versions(source_name, table, key_columns, keys_in=none, key_column=none) -%}
    {%- set restricted = backfill_safe.versions_in_scope(
        source_name, table, keys_in, key_column or key_columns[0]) -%}
    {%- set loadable -%}
        ({{ backfill_safe.screened_versions(restricted, source_name, table,
            key_columns=key_columns) }})
    {%- endset -%}
    {{ backfill_safe.latest_version(loadable, key_columns,
        backfill_safe.landing_contract(source_name, table).update_column) }}
{%- endmacro %}
