{#- What the runs of a model of the kind changed, kept for the models of the kind that read it
    (a scope whose changes name it: `{model: <name>, key: <column>}`, scope_model_changes), so
    that their runs recompute exactly the keys those changes reach, whatever ran in between.
    The table `<control schema>.<model's table>__changes`, one per upstream model, holds for
    each run that changed rows: the rows as they were before it (`_change = 'old'`: every
    row its MERGE updates or deletes) and as they are after it (`'new'`: every row it inserts
    or updates), every column of the model, with the run's invocation and its start
    (`_run_started_at`, dbt's run_started_at: the clock of the readers' landing bound,
    incremental_landed_bound). A full build writes one row `'rebuilt'` (every key may have
    changed) into a table made anew (its columns may have changed with it). Written before the
    MERGE commits, as its own Iceberg commit: a MERGE that then fails leaves rows of changes
    that did not happen, and a reader recomputes those keys for nothing (it finds no row to
    merge); a MERGE never commits without its rows recorded. Nothing is recorded for a model no
    model reads this way, nor for a dual run's scratch build, nor under `pipeline explain`.
    Not branched: a backfill's changes are recorded on main with its invocation, and the
    readers in the same backfill restate exactly those keys (model_scope_keys_select). -#}
{% macro model_changes_relation(identifier) %}
    {{ return(var('control_schema', 'control') ~ '.'
        ~ backfill_safe.validated_identifier(identifier) ~ '__changes') }}
{% endmacro %}


{#- The names of the models whose declared scope names model `name` among its changes: the
    readers of its change records. Empty while dbt parses. -#}
{% macro readers_of_model(name) %}
    {% set found = [] %}
    {% if execute %}
        {% for node in graph.nodes.values() if node.resource_type == 'model' %}
            {% set scope = ((node.config.meta or {}).get('backfill_safe') or {}).get('scope') %}
            {% for change in backfill_safe.scope_change_entries(
                scope.get('changes') if scope is mapping else none).models
                if change.get('model') == name %}
                {% do found.append(node.name) %}
            {% endfor %}
        {% endfor %}
    {% endif %}
    {{ return(found | unique | list) }}
{% endmacro %}


{#- True when this run of the model records its changes (model_changes_relation). -#}
{% macro records_model_changes() %}
    {% set plan = backfill_safe.run_plan() %}
    {{ return(plan.declared is not none
        and plan.dual_run_model is none and not plan.explaining
        and backfill_safe.readers_of_model(model.name) | length > 0) }}
{% endmacro %}


{#- Before the MERGE of an incremental run (guarded_merge_sql): the rows it will change, as
    they are (`target`'s rows of the keys `source` holds, within `partitions`, a predicate on
    the target's columns that holds for each of them, or none) and as they will be (`source`'s
    rows not flagged `_is_deleted`), appended to the model's change records. With
    `version_column` (the MERGE's guard), a source row older than the table's is left out, as
    the MERGE leaves it: the images are exactly what the MERGE changes (a model maintained by
    deltas adds them up: additive_deltas). The target is read once: its rows of the source's
    keys (a semi join that broadcasts the source), each paired with its source row, which gives
    both images and the guard (a held row paired has a key: the pairing is on it). -#}
{% macro record_model_changes(target, source, unique_key, partitions=none,
    version_column=none) %}
    {% if not backfill_safe.records_model_changes() %}
        {{ return('') }}
    {% endif %}
    {% set changes = backfill_safe.model_changes_relation(target.identifier) %}
    {% set columns = backfill_safe.column_names(target) %}
    {% do backfill_safe.create_model_changes(changes, target, false) %}
    {% set stamp = "'" ~ invocation_id ~ "' as _invocation_id, "
        ~ backfill_safe.timestamp_literal(run_started_at) ~ " as _run_started_at" %}
    {#- the MERGE's guard: a source row older than the held one is not merged (`new`), a held
        row is replaced by a source row as new or newer (`old`) -#}
    {% set not_older = ("not coalesce(changed." ~ version_column ~ " < held." ~ version_column
        ~ ", false)") if version_column else "true" %}
    {% set replaced = ("coalesce(changed." ~ version_column ~ " >= held." ~ version_column
        ~ ", false)") if version_column else "true" %}
    {% call statement('record_model_changes', fetch_result=false) %}
        insert into {{ changes }} (_change, _invocation_id, _run_started_at, {{ columns | join(', ') }})
        select image._change, {{ stamp }},
            {%- for column in columns %}
            image.row.{{ column }}{{ "," if not loop.last }}
            {%- endfor %}
        from (
            select explode(array(
                case when not changed._is_deleted and {{ not_older }} then named_struct(
                    '_change', 'new', 'row', struct(
                    {%- for column in columns %}
                    changed.{{ column }}{{ "," if not loop.last }}
                    {%- endfor %})) end,
                case when held.{{ unique_key }} is not null and {{ replaced }} then named_struct(
                    '_change', 'old', 'row', struct(
                    {%- for column in columns %}
                    held.{{ column }}{{ "," if not loop.last }}
                    {%- endfor %})) end
            )) as image
            from {{ source }} as changed
            left join (
                select held.*
                from {{ target }} as held
                left semi join {{ source }} as keys on keys.{{ unique_key }} = held.{{ unique_key }}
                {%- if partitions %}
                where ({{ partitions }})
                {%- endif %}
            ) as held on held.{{ unique_key }} = changed.{{ unique_key }}
        ) as images
        where image is not null
    {% endcall %}
    {{ return('') }}
{% endmacro %}


{#- After a full build of the model (the materialization): its change records made anew, with
    the columns of the table just built, and one row `'rebuilt'`: every reader's next run
    recomputes every key. -#}
{% macro record_model_rebuilt(target) %}
    {% if not backfill_safe.records_model_changes() %}
        {{ return('') }}
    {% endif %}
    {% set changes = backfill_safe.model_changes_relation(target.identifier) %}
    {% do backfill_safe.create_model_changes(changes, target, true) %}
    {#- one row, the model's columns null (typed: a left join that matches nothing) -#}
    {% call statement('record_model_rebuilt', fetch_result=false) %}
        insert into {{ changes }}
        select
            'rebuilt' as _change,
            '{{ invocation_id }}' as _invocation_id,
            {{ backfill_safe.timestamp_literal(run_started_at) }} as _run_started_at,
            recorded.*
        from (select 1 as one) as one_row
        left join {{ target }} as recorded on false
    {% endcall %}
    {{ return('') }}
{% endmacro %}


{#- Creates the change records `changes` of `target` (the model's table) when missing, or
    anew (`replace`): the model's columns after _change, _invocation_id, _run_started_at,
    partitioned by the day of the run's start (a reader reads the days after its bound). Missing
    is known from the invocation's listing (recorded_change_tables): a daily run whose records
    exist sends nothing here. -#}
{% macro create_model_changes(changes, target, replace) %}
    {% set recorded = backfill_safe.recorded_change_tables() %}
    {% if not replace and (changes | lower) in recorded %}
        {{ return(none) }}
    {% endif %}
    {% call statement('create_control_schema', fetch_result=false) %}
        create schema if not exists {{ var('control_schema', 'control') }}
    {% endcall %}
    {% if replace %}
        {% call statement('drop_model_changes', fetch_result=false) %}
            drop table if exists {{ changes }}
        {% endcall %}
    {% endif %}
    {% call statement('create_model_changes', fetch_result=false) %}
        create table if not exists {{ changes }}
        using iceberg
        partitioned by (days(_run_started_at))
        tblproperties ('format-version' = '2')
        as select
            cast(null as string) as _change,
            cast(null as string) as _invocation_id,
            cast(null as timestamp) as _run_started_at,
            recorded.*
        from {{ target }} as recorded
        where false
    {% endcall %}
    {% if (changes | lower) not in recorded %}
        {% do recorded.append(changes | lower) %}
    {% endif %}
{% endmacro %}
