{#- A dimension's rows (declared_dimension): its surrogate key (surrogate_key of the member key,
    and for type 2 of the update time), the body's columns, for type 2 the validity interval
    (effective_interval), and the unknown member. An incremental run restricts the body to
    the members with a version in its scope (scope_predicate: updated after the lower bound)
    and those the table does not hold yet (a late-arriving member: the facts waiting on it
    re-key as soon as it lands); type 2 rebuilds every version of such a member, so a late
    version both appears and closes the interval before it (versions_of_changed_members).
    Only the rows that differ from the table are merged (rows_to_merge). -#}
{% macro dimension_rows(plan, body, columns) %}
    {% set declared, full_build = plan.declared, plan.full_build %}
    {% set dimension = declared.dimension %}
    {% set member_key = dimension.member_key %}
    {% set scope = none if full_build else backfill_safe.scope_predicate(plan) %}
    {% set versions = "(\n" ~ body ~ "\n)" %}
    {% if dimension.type == 2 %}
        {% set scoped = backfill_safe.versions_of_changed_members(versions, member_key, scope) %}
        {% set derived = backfill_safe.surrogate_key([member_key, 'updated_at']) ~ " as "
            ~ declared.unique_key ~ ", versions.*, " ~ backfill_safe.effective_interval(member_key) %}
    {% else %}
        {#- the members with a version landed since the last committed run started: a superset
            of the scope (every version in it landed since, and so did every member the table
            does not hold yet: that run loaded every one landed before it), on the landed
            sources' own columns, where Spark and Iceberg can restrict the staging by it -#}
        {% set landed = [] %}
        {% set bound = backfill_safe.incremental_landed_bound() if scope else none %}
        {% for source_id in (backfill_safe.landed_inputs(model.unique_id) if bound else []) %}
            {% set src = graph.sources[source_id] %}
            {% if member_key in backfill_safe.landing_contract(src.source_name, src.name).columns %}
                {% do landed.append("select " ~ member_key ~ " from "
                    ~ source(src.source_name, src.name) ~ " where _loaded_at > " ~ bound) %}
            {% endif %}
        {% endfor %}
        {% set scoped %}
            select * from {{ versions }} as versions
            {%- if scope %}
            where
                {%- if landed %}
                {{ member_key }} in ({{ landed | join(' union all ') }}) and (
                {%- endif %}
                {{ scope }}
                -- not exists, not `not in`: a null key in the table must not empty the result
                or not exists (
                    select 1 from {{ this }} as known
                    where known.{{ member_key }} = versions.{{ member_key }}
                )
                {%- if landed %}
                )
                {%- endif %}
            {%- endif %}
        {% endset %}
        {% set derived = backfill_safe.surrogate_key([member_key]) ~ " as "
            ~ declared.unique_key ~ ", versions.*" %}
    {% endif %}
    {#- the unknown member: the row facts point to while their member has not arrived -#}
    {% set given = dimension.unknown_member %}
    {% set framework = {
        declared.unique_key: backfill_safe.unknown_member_key(),
        'is_deleted': 'false', 'is_current': 'true', 'valid_to': 'cast(null as timestamp)',
        'valid_from': "cast('1900-01-01 00:00:00' as timestamp)",
        'updated_at': "cast('1900-01-01 00:00:00' as timestamp)"} %}
    {% set unknown_values = [] %}
    {% for column in columns %}
        {% if column in framework %}
            {% set value = framework[column] %}
        {% elif column in given %}
            {% set value = backfill_safe.sql_literal(given[column]) %}
        {% elif column == member_key %}
            {% set value = '-1' %}
        {% else %}
            {% set value = 'null' %}
        {% endif %}
        {% do unknown_values.append(value ~ " as " ~ column) %}
    {% endfor %}
    {% set live %}
        (select {{ columns | join(', ') }}
        from (
            select {{ derived }}
            from ({{ scoped }}) as versions
        ) as dimension
        union all
        select {{ unknown_values | join(', ') }})
    {% endset %}
    {% if full_build %}
        {{ return("select * from " ~ live ~ " as live") }}
    {% endif %}
    {{ return(backfill_safe.rows_to_merge(live, none, declared.unique_key, none)) }}
{% endmacro %}
