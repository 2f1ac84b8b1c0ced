{% macro versions_of_changed_members(versions, member_key, scope) -%}
    {#- A type-2 dimension's versions to rebuild in a run: every version of each member with a
        version in the run's scope (a predicate on the versions' own columns, from
        scope_predicate), and of each member the table does not hold yet however old its
        versions (rows waiting on the unknown member re-key as soon as it lands); every version
        on a full build (no scope). Rebuilding all of a member's versions lets a late version both
        appear and close the interval of the version before it (effective_interval). -#}
    {%- if not backfill_safe.is_identifier(member_key) %}
        {{ exceptions.raise_compiler_error(
            "versions_of_changed_members in model " ~ model.name ~ ": member_key must be one column"
            ~ " name, got " ~ member_key) }}
    {%- endif %}
    select versions.*
    from {{ versions }} as versions
    {%- if scope %}
        left semi join (
            select distinct changed.{{ member_key }}
            from {{ versions }} as changed
            -- not exists, not `not in`: a null key in the table must not empty the result
            where
                {{ scope }}
                or not exists (
                    select 1 from {{ this }} as known
                    where known.{{ member_key }} = changed.{{ member_key }}
                )
        ) as changed_members
            on versions.{{ member_key }} = changed_members.{{ member_key }}
    {%- endif %}
{%- endmacro %}
