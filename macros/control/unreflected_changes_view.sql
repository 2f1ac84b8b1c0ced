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
        or backfill_safe.backfill_window() is not none or var('dual_run_model', none) is not none %}
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
            {% set over_models = item.scope is not none and item.scope.models %}
            {% for column in [item.unique_key, item.event_date]
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
        {% elif item.scope is not none and item.scope.models %}
            {% do parts.append("select * from (" ~ backfill_safe.unreflected_changes_over_models(
                item.relation, item.current_state_relation, item.unique_key, item.name,
                item.event_date, item.scope, columns=table_names,
                window_days=item.restatement_window
            ) ~ ") as " ~ backfill_safe.validated_identifier(item.name)) %}
        {% else %}
            {% do parts.append("select * from (" ~ backfill_safe.unreflected_changes(
                item.relation, item.current_state_relation, item.unique_key, item.lookback,
                item.name, item.event_date, columns=table_names,
                window_days=item.restatement_window
            ) ~ ") as " ~ backfill_safe.validated_identifier(item.name)) %}
        {% endif %}
    {% endfor %}
    {% set body = parts | join('\nunion all\n') %}
    {% set fingerprint = local_md5(view ~ ' as ' ~ body) %}
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
        create schema if not exists {{ view.schema }}
    {% endcall %}
    {#- dropped and created, not replaced: see spark__create_view_as -#}
    {% do backfill_safe.drop_view_to_replace(view, body) %}
    {% call statement('replace_unreflected_changes_view') %}
        create view {{ view }}
        tblproperties (
            'backfill_safe.view_md5' = '{{ fingerprint }}',
            'backfill_safe.audited_models' = '{{ declared | map(attribute='name') | join(',') }}'
        )
        as
        {{ body }}
    {% endcall %}
    {{ return('') }}
{% endmacro %}

{#- The audit view of unreflected changes: `<audit_schema>.audit_unreflected_changes`. -#}
{% macro unreflected_changes_relation() %}
    {{ return(api.Relation.create(schema=var('audit_schema', 'audit'),
                                  identifier='audit_unreflected_changes', type='view')) }}
{% endmacro %}
