{#- on-run-end: keeps the view `<audit_schema>.audit_unreflected_changes` (var audit_schema,
    default audit): unreflected_changes of every declared model (declared_models), one union,
    each row flagged beyond_restatement_window against its model's restatement window
    (restatement_window_days): `pipeline restate` holds those until they are signed off.
    The framework keeps this view, not a model file, so a new declared model joins it without
    any edit: a model reading every declared model would have to name each of them (a
    `-- depends_on:` line) for dbt to run it after them, and dbt knows no graph while it parses.
    After a run or build that ran a declared model or its current state (a new model, a changed
    one, a full refresh), the union is compiled from the graph and the tables' columns, and the
    view is replaced when that statement's md5 differs from the one it carries (table property
    backfill_safe.view_md5) or on --full-refresh; a run of none of them does nothing and reads
    nothing. A declared model whose table or current state is not built yet is one row with
    problem 'not built' (the missing relations in differing_columns, no dates; for a model over
    models, an upstream model's missing table too: its current state reads it), not left out:
    `pipeline restate` refuses it by name, as
    it refuses a declared model the view does not cover yet (table property
    backfill_safe.audited_models lists the models it covers). Likewise a declared model whose
    table and current state cannot be compared (the key, event date or updated_at missing from
    the table, a column of the table or is_deleted missing from the current state: a schema
    change half done) is one row 'not auditable' naming the columns, rather than failing the
    run of every other model at its end.
    Nothing under backfill vars (windows write to branches; the view reads the published
    tables) nor for a dual run's scratch build. -#}
{% macro unreflected_changes_view(results) %}
    {% if not execute or flags.WHICH not in ('run', 'build')
        or backfill_safe.run_mode().window is not none or backfill_safe.run_mode().dual_run_model is not none %}
        {{ return('') }}
    {% endif %}
    {% set declared = backfill_safe.declared_models() %}
    {% set ran = results | map(attribute='node') | map(attribute='unique_id') | list %}
    {% set touched = declared | selectattr('unique_id', 'in', ran) | list
        + declared | selectattr('current_state', 'in', ran) | list %}
    {% if not touched %}
        {{ return('') }}
    {% endif %}
    {% set view = backfill_safe.unreflected_changes_relation() %}
    {% set parts = [] %}
    {% for item in declared %}
        {% set problem = {} %}
        {% set missing = [] %}
        {#- a model over models: its current state reads the upstream models' tables, and a
            view over a missing table cannot be created -#}
        {% set upstream_relations = [] %}
        {% for upstream in (item.scope.models if item.scope is not none else [])
            if graph.nodes.get(upstream.unique_id) is not none %}
            {% set node = graph.nodes[upstream.unique_id] %}
            {% do upstream_relations.append(api.Relation.create(database=node.database,
                schema=node.schema, identifier=node.alias, type='table')) %}
        {% endfor %}
        {% for relation in [item.relation, item.current_state_relation] + upstream_relations %}
            {% if adapter.get_relation(database=relation.database, schema=relation.schema,
                                       identifier=relation.identifier) is none %}
                {% do missing.append(relation ~ '') %}
            {% endif %}
        {% endfor %}
        {% if missing %}
            {% do problem.update({'not built': 'missing: ' ~ missing | join(', ')}) %}
        {% else %}
            {#- the comparison needs the key, event date and updated_at in the table, and every
                column of the table plus is_deleted in the current state -#}
            {% set table_names = backfill_safe.column_names(item.relation) %}
            {% set table_columns = table_names | map('lower') | list %}
            {% set state_columns = backfill_safe.column_names(item.current_state_relation)
                | map('lower') | list %}
            {% set absent = [] %}
            {% set over_models = item.reads_models %}
            {% for column in [item.unique_key] + ([item.event_date] if item.event_date else [])
                + ([] if over_models else ['updated_at']) if column | lower not in table_columns %}
                {% do absent.append(item.relation ~ '.' ~ column) %}
            {% endfor %}
            {% for column in table_columns + ['is_deleted'] if column not in state_columns %}
                {% do absent.append(item.current_state_relation ~ '.' ~ column) %}
            {% endfor %}
            {% if absent %}
                {% do problem.update(
                    {'not auditable': 'columns missing: ' ~ absent | join(', ')}) %}
            {% endif %}
        {% endif %}
        {% if problem %}
            {% set name, why = (problem.items() | list)[0] %}
            {% do parts.append(
                "select '" ~ backfill_safe.validated_identifier(item.name) ~ "' as model_name,"
                ~ " cast(null as string) as unique_key, '" ~ name ~ "' as problem,"
                ~ " '" ~ why | replace("'", "") ~ "' as differing_columns,"
                ~ " cast(null as timestamp) as source_updated_at,"
                ~ " cast(null as timestamp) as loaded_updated_at,"
                ~ " cast(null as date) as event_date, cast(null as date) as loaded_event_date,"
                ~ " cast(null as date) as restate_date,"
                ~ " cast(null as int) as restatement_window_days,"
                ~ " false as beyond_restatement_window") %}
        {% elif item.reads_models %}
            {% do parts.append("select * from (" ~ backfill_safe.unreflected_changes_over_models(
                item.relation, item.current_state_relation, item.unique_key, item.name,
                item.event_date, item.scope, columns=table_names,
                window_days=item.restatement_window, behind=true
            ) ~ ") as " ~ backfill_safe.validated_identifier(item.name)) %}
        {% else %}
            {% do parts.append("select * from (" ~ backfill_safe.unreflected_changes(
                item.relation, item.current_state_relation, item.unique_key, item.lookback,
                item.name, item.event_date, columns=table_names,
                window_days=item.restatement_window
            ) ~ ") as " ~ backfill_safe.validated_identifier(item.name)) %}
        {% endif %}
    {% endfor %}
    {{ return(backfill_safe.replace_audit_tree(view, declared | map(attribute='name') | list,
                                               parts)) }}
{% endmacro %}


{#- The view tree behind `view` (audit_unreflected_changes): one view per declared model, named
    by its name and the md5 of its SQL (`<view>` schema, `unreflected_changes__<model>__<md5>`),
    created only when no view of that SQL exists; part views of at most audit_part_limits()
    model views each (`unreflected_changes__part__<md5>`, their models listed in the table
    property backfill_safe.audited_models); and `view`, the union of the parts (its parts in
    backfill_safe.audit_parts). No stored text grows with the project: the embedded metastore
    keeps a view's text in a column of 32,700 characters, which one union of every model's
    audit outgrew at 8 declared models. A new version of a model's audit never touches the
    views readers use; only `view` is replaced. The new tree is analysed first, in one `explain`
    (analysis_failure): a model's audit that cannot be analysed (a schema change half done)
    keeps every view as it is and fails the hook, naming the model and why, as a statement dbt
    runs and reports (failing_statement), not an error raised while dbt compiles the hook (which
    ends its summary with "keyboard interrupt" and ERROR=0). Then `view` is dropped and created
    (a `create or replace view` would leave the old SQL in the metastore: spark__create_view_as).
    Between the two a reader finds no view: the create of a union of part views, well under a
    second here. An atomic rename of a staged
    view was tried: Iceberg's rename of a view in an embedded metastore left a lock that made
    every later metastore write of another thread wait and fail (`One or more instances
    could not be made persistent`; harness.generated_project's second run). The versions no
    longer referenced are dropped last. `bodies`: the models' audit selects, in the order of
    `names`. -#}
{% macro replace_audit_tree(view, names, bodies) %}
    {% set schema = view.schema %}
    {% set prefix = 'unreflected_changes__' %}
    {% set members = [] %}
    {% for name in names %}
        {% set body = bodies[loop.index0] %}
        {% set member = schema ~ '.' ~ prefix ~ backfill_safe.validated_identifier(name)
            ~ '__' ~ local_md5(body)[:12] %}
        {% do members.append({'name': name, 'view': member, 'body': body}) %}
    {% endfor %}
    {#- parts: consecutive members, each within the limits of text and listed names -#}
    {% set parts = backfill_safe.view_tree_parts(members) %}
    {% set part_views = [] %}
    {% for part in parts %}
        {% set body = backfill_safe.union_of_views(part | map(attribute='view') | list) %}
        {% do part_views.append({'view': schema ~ '.' ~ prefix ~ 'part__' ~ local_md5(body)[:12],
                                 'body': body, 'members': part}) %}
    {% endfor %}
    {% set top_body = backfill_safe.union_of_views(part_views | map(attribute='view') | list)
        if part_views else backfill_safe.unreflected_changes_empty() %}
    {% set fingerprint = local_md5(view ~ ' as ' ~ top_body) %}
    {% set existing = adapter.get_relation(database=view.database, schema=view.schema,
                                           identifier=view.identifier) %}
    {% set carried = modules.re.search('backfill_safe[.]view_md5=([0-9a-f]{32})',
        (existing.information or '') if existing is not none else '') %}
    {% if existing is not none and existing.is_view and carried is not none
        and carried.group(1) == fingerprint and not flags.FULL_REFRESH %}
        {{ return('') }}
    {% endif %}
    {#- statements, not run_query: through a Thrift Server PyHive cannot fetch DDL's empty
        result -#}
    {% call statement('create_audit_schema') %}
        create schema if not exists {{ schema }}
    {% endcall %}
    {% set listed = run_query("show views in " ~ schema ~ " like '" ~ prefix ~ "*'") %}
    {% set present = listed.columns[1].values() | map('lower') | list
        if listed is not none else [] %}
    {#- the new tree analysed before anything is created: the new models' audits inline, the
        others' views by name (one statement); a failure keeps every view as it is and fails
        the hook (analysis_failure) -#}
    {% set inline = [] %}
    {% for member in members %}
        {% do inline.append(member.body if (member.view.split('.')[-1] | lower) not in present
                            else 'select * from ' ~ member.view) %}
    {% endfor %}
    {% set failure = backfill_safe.analysis_failure(inline | join('\nunion all\n')) %}
    {% if failure is not none %}
        {#- which model's audit: each alone -#}
        {% set culprits = [] %}
        {% for member in members %}
            {% set error = backfill_safe.analysis_failure(inline[loop.index0]) %}
            {% if error is not none %}
                {% do culprits.append(member.name ~ ': ' ~ error) %}
            {% endif %}
        {% endfor %}
        {{ return(backfill_safe.failing_statement(
            view ~ " not replaced (the previous one is kept): the audit of "
            ~ ((culprits | join('; ')) if culprits else 'the declared models: ' ~ failure)
            ~ " (a schema change half done? `dbt run --full-refresh --select` the model)")) }}
    {% endif %}
    {% for member in members if (member.view.split('.')[-1] | lower) not in present %}
        {% call statement('create_audit_of_' ~ member.name) %}
            create view {{ member.view }}
            tblproperties ('backfill_safe.audited_models' = '{{ member.name }}')
            as
            {{ member.body }}
        {% endcall %}
    {% endfor %}
    {% for part in part_views if (part.view.split('.')[-1] | lower) not in present %}
        {% call statement('create_audit_part') %}
            create view {{ part.view }}
            tblproperties (
                'backfill_safe.audited_models' = '{{ part.members | map(attribute='name') | join(',') }}'
            )
            as
            {{ part.body }}
        {% endcall %}
    {% endfor %}
    {% call statement('replace_unreflected_changes_view') %}
        drop view if exists {{ view }}
    {% endcall %}
    {% call statement('replace_unreflected_changes_view') %}
        create view {{ view }}
        tblproperties (
            'backfill_safe.view_md5' = '{{ fingerprint }}',
            'backfill_safe.audit_parts' = '{{ part_views | map(attribute='view') | join(',') }}'
        )
        as
        {{ top_body }}
    {% endcall %}
    {#- the versions the new tree no longer reads (and a top staged by a run that failed) -#}
    {% set kept = (members | map(attribute='view') | list)
        + (part_views | map(attribute='view') | list) %}
    {% set kept = kept | map('lower') | map('replace', schema | lower ~ '.', '') | list %}
    {% for old in present if old not in kept %}
        {% call statement('drop_old_audit_view') %}
            drop view if exists {{ schema }}.{{ old }}
        {% endcall %}
    {% endfor %}
    {{ return('') }}
{% endmacro %}


{#- How large a view of the audit tree may grow (replace_audit_tree): `models` views united in
    one, `text` characters of its SQL (the embedded metastore holds 32,700), `names` characters
    of its backfill_safe.audited_models property (a metastore may hold 4,000). -#}
{% macro audit_part_limits() %}
    {{ return({'models': var('audit_part_models', 100) | int, 'text': 24000, 'names': 3500}) }}
{% endmacro %}


{#- `select * from` each of `views`, united. -#}
{% macro union_of_views(views) %}
    {%- set selects = [] -%}
    {%- for name in views -%}
        {%- do selects.append('select * from ' ~ name) -%}
    {%- endfor -%}
    {{- return(selects | join('\nunion all\n')) -}}
{% endmacro %}


{#- The audit's columns with no row: the view when no model is declared. -#}
{% macro unreflected_changes_empty() %}
    {{ return("select cast(null as string) as model_name, cast(null as string) as unique_key,"
        ~ " cast(null as string) as problem, cast(null as string) as differing_columns,"
        ~ " cast(null as timestamp) as source_updated_at,"
        ~ " cast(null as timestamp) as loaded_updated_at,"
        ~ " cast(null as date) as event_date, cast(null as date) as loaded_event_date,"
        ~ " cast(null as date) as restate_date, cast(null as int) as restatement_window_days,"
        ~ " false as beyond_restatement_window where false") }}
{% endmacro %}


{#- The audit view of unreflected changes: `<audit_schema>.audit_unreflected_changes`. -#}
{% macro unreflected_changes_relation() %}
    {{ return(api.Relation.create(schema=var('audit_schema', 'audit'),
                                  identifier='audit_unreflected_changes', type='view')) }}
{% endmacro %}
