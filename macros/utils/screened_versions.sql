{#- The versions of landed raw table `source_name`.`table` with their quarantine verdict, as a
    select over `relation` (the source, or a CTE of it): the table's columns plus `_quarantine_reason`, null for a
    loadable version. Besides the row rules of quarantine_reason, versions of one key with the
    same updated_at in one file that disagree (different content) are all quarantined: no rule
    can tell which one the source meant, so the key keeps its previous version. (Across files the
    later landing wins: latest_version.) Exact duplicates are not a conflict; they collapse.
    keep: 'valid' (the loadable versions), 'quarantined', or 'all'. key_columns: the key when the
    contract has none (a dbt unit test's: landing_contract).
    One window over the key (peers: same updated_at and file), the partitioning latest_version
    uses next, so Spark shuffles the versions once. -#}
{% macro screened_versions(relation, source_name, table, keep='valid', key_columns=none) %}
    {%- set contract = backfill_safe.landing_contract(source_name, table) -%}
    {%- set keys = contract.unique_key or key_columns -%}
    {%- if not keys -%}
        {{ exceptions.raise_compiler_error("screened_versions(" ~ source_name ~ "." ~ table
            ~ "): its key is unknown (a dbt unit test has no landing contract to read it from):"
            ~ " pass key_columns, or override macro backfill_safe.landing_contract") }}
    {%- endif -%}
    {%- if keep not in ('valid', 'quarantined', 'all') -%}
        {{ exceptions.raise_compiler_error(
            "screened_versions: keep must be 'valid', 'quarantined' or 'all', not '" ~ keep ~ "'") }}
    {%- endif -%}
    select *
    from (
        select
            checked.*,
            coalesce(
                checked._row_problem,
                case
                    when checked._least_payload <> checked._greatest_payload
                        then 'conflicting versions with the same key and updated_at in one file'
                end
            ) as _quarantine_reason
        from (
            select
                hashed.*,
                {{ backfill_safe.quarantine_reason(source_name, table, keys) }} as _row_problem,
                -- over the versions of the key with the same updated_at and file (the peers of
                -- the row in this order): the same partitioning as latest_version's, one shuffle
                min(hashed._payload) over peers as _least_payload,
                max(hashed._payload) over peers as _greatest_payload
            from (
                select
                    versions.*,
                    xxhash64(versions.*) as _payload
                from {{ relation }} as versions
            ) as hashed
            window peers as (
                partition by {% for key in keys %}hashed.{{ key }}{{ ", " if not loop.last }}{% endfor %}
                order by hashed.{{ contract.update_column }}, hashed._source_file
                range between current row and current row
            )
        ) as checked
    ) as screened
    {%- if keep == 'valid' %}
    where _quarantine_reason is null
    {%- elif keep == 'quarantined' %}
    where _quarantine_reason is not null
    {%- endif %}
{%- endmacro %}
