{#- A union over every member of a set that grows with the project (a view per landed table, per
    declared model), kept as a tree of views so that no stored text grows with it: the embedded
    metastore holds a view's text in a column of 32,700 characters, which one union outgrew at
    8 declared models (the audit, issue 78) and at 39 landed tables (the quarantine, issue 81).
    `members`: [{name, body}] in a stable order. Each member is a view named by `prefix`, its
    name and the md5 of its SQL (`<schema>.<prefix><name>__<md5>`), so a view of one SQL is
    created once and never replaced; consecutive members make part views
    (`<schema>.<prefix>part__<md5>`) within audit_part_limits() (view_tree_parts); `top` is the
    union of the parts, the SQL the tree's reader (a model, a view) is. Nothing here runs a
    statement: create_view_tree makes what is missing. -#}
{% macro view_tree(schema, prefix, members) %}
    {% set named = [] %}
    {% for member in members %}
        {% do named.append({'name': member.name, 'body': member.body,
            'view': schema ~ '.' ~ prefix ~ backfill_safe.validated_identifier(member.name)
                ~ '__' ~ local_md5(member.body)[:12]}) %}
    {% endfor %}
    {% set parts = [] %}
    {% for part in backfill_safe.view_tree_parts(named) %}
        {% set body = backfill_safe.union_of_views(part | map(attribute='view') | list) %}
        {% do parts.append({'view': schema ~ '.' ~ prefix ~ 'part__' ~ local_md5(body)[:12],
                            'body': body, 'members': part}) %}
    {% endfor %}
    {{ return({'schema': schema, 'prefix': prefix, 'members': named, 'parts': parts,
               'top': backfill_safe.union_of_views(parts | map(attribute='view') | list)}) }}
{% endmacro %}


{#- Consecutive `members` ({name, view}) grouped into parts, each within the limits of
    audit_part_limits(): at most `models` views united, `text` characters of SQL, `names`
    characters of the members' names listed (a table property); a compiler error when the parts
    themselves are more than one view may unite. -#}
{% macro view_tree_parts(members) %}
    {% set limits = backfill_safe.audit_part_limits() %}
    {% set parts = [] %}
    {% set current = {'members': [], 'text': 0, 'names': 0} %}
    {% for member in members %}
        {% set text = member.view | length + 30 %}
        {% if current.members and (current.members | length >= limits.models
            or current.text + text > limits.text or current.names + member.name | length + 1 > limits.names) %}
            {% do parts.append(current.members) %}
            {% do current.update({'members': [], 'text': 0, 'names': 0}) %}
        {% endif %}
        {% do current.members.append(member) %}
        {% do current.update({'text': current.text + text,
                              'names': current.names + member.name | length + 1}) %}
    {% endfor %}
    {% if current.members %}
        {% do parts.append(current.members) %}
    {% endif %}
    {% if parts | length > limits.models %}
        {{ exceptions.raise_compiler_error("view_tree_parts: " ~ members | length
            ~ " views make " ~ parts | length ~ " parts, more than the " ~ limits.models
            ~ " one view unites; raise var audit_part_models") }}
    {% endif %}
    {{ return(parts) }}
{% endmacro %}


{#- The views of `tree` (view_tree) that do not exist yet, created (members, then parts): one
    listing of the schema's views of the tree's prefix, and nothing else when all exist. What was
    listed is kept for drop_views_outside_tree. Its schema exists (dbt makes a model's schema
    before its pre-hook runs). Returns ''. -#}
{% macro create_view_tree(tree) %}
    {% if not execute %}
        {{ return('') }}
    {% endif %}
    {% set listed = run_query("show views in " ~ tree.schema ~ " like '" ~ tree.prefix ~ "*'") %}
    {% set present = listed.columns[1].values() | map('lower') | list
        if listed is not none else [] %}
    {% do backfill_safe.invocation_store('view_tree_present').update(
        {tree.schema ~ '.' ~ tree.prefix: present}) %}
    {% for view in tree.members + tree.parts if (view.view.split('.')[-1] | lower) not in present %}
        {% call statement('create_view_tree_member') %}
            create view {{ view.view }} as
            {{ view.body }}
        {% endcall %}
    {% endfor %}
    {{ return('') }}
{% endmacro %}


{#- The views of the tree's prefix in its schema that `tree` no longer has (older versions of a
    member, parts of another grouping), dropped: after the tree's reader was replaced. Reads
    what create_view_tree listed in this invocation. Returns ''. -#}
{% macro drop_views_outside_tree(tree) %}
    {% if not execute %}
        {{ return('') }}
    {% endif %}
    {% set present = backfill_safe.invocation_store('view_tree_present').get(
        tree.schema ~ '.' ~ tree.prefix, []) %}
    {% set kept = (tree.members + tree.parts) | map(attribute='view') | map('lower')
        | map('replace', tree.schema | lower ~ '.', '') | list %}
    {% for old in present if old not in kept %}
        {% call statement('drop_view_outside_tree') %}
            drop view if exists {{ tree.schema }}.{{ old }}
        {% endcall %}
    {% endfor %}
    {{ return('') }}
{% endmacro %}
