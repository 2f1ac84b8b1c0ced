{#- The MERGE of every model of the kind (called by the materialization; dbt-spark's merge
    strategy stays the plain models'). Compared with dbt-spark's `update set * / insert *`:
    - `_is_deleted` source rows delete their target row and are never inserted (rule 6);
    - an update applies only when the source's version column (config `version_column`,
      default updated_at) is not older than the target's: a stale version never overwrites a
      newer one (rule 5);
    - explicit column lists taken from the table, and a clear error when the model's columns
      no longer match the table's (schema change: run with --full-refresh);
    - `incremental_predicates` are added to the ON clause to prune the target scan (rule 7),
      and for a model with a declared scope (run_plan.scope) the event dates of its run
      (scope_event_dates, on its declared event_date);
    - for a model with a declared scope, the scope keys of its staged source as literals (up
      to var merge_scope_literals_max, 20000): the MERGE of a merge-on-read table joins the
      target to the source by a shuffle (a right outer join: the target side cannot be
      broadcast), and the literals filter the target's rows before it, where the event dates
      only prune files (docs/benchmarks/history.md);
    - unless meta `stage_merge_source` is false (staging is the default), `source` is the
      scratch table the materialization wrote the rows to merge to (stage_merge_source, from
      the select `staged_from`) instead of a view evaluated by each of the MERGE's passes;
      when it holds no row (no row of the table changes: a dimension on most days, any
      rerun) no MERGE runs at all, so the run commits no empty snapshot. (A run whose inputs
      landed nothing since its last one never gets here, nor one of a reference table whose
      select has no row: idle_merge_statement, idle_reference_statement.)
    Under `pipeline explain` (var explain_next_run, explaining) everything up to the MERGE runs
    as in a run (the staging included), then the select and the MERGE are planned and not run
    (explain_statement), and a select that writes nothing is returned instead.
    The marts are merge-on-read: the MERGE adds the changed rows and position deletes, only in
    the partitions of matched or inserted rows. -#}
{% macro guarded_merge_sql(target, source, unique_key, incremental_predicates, staged_from=none,
    described=none) %}
    {% if unique_key is none or unique_key is not string %}
        {{ exceptions.raise_compiler_error(
            "model " ~ target ~ ": the merge strategy here needs one unique_key column, got "
            ~ unique_key) }}
    {% endif %}
    {% set plan = backfill_safe.run_plan() %}
    {% set reference = plan.declared is not none and plan.declared.reference %}
    {% set scope = plan.scope %}
    {#- a reference table's select is the truth: no version guard; nor a model whose changes
        are models of the kind: its rows are recomputed whole from its upstream tables (a
        group's greatest update time may go down when a row of it is deleted) -#}
    {% set version_column = none if reference
        or (plan.declared is not none and plan.declared.reads_models)
        else config.get('version_column', 'updated_at') %}
    {#- `described`: {'target': names, 'source': names} when the caller has just described both
        (the materialization's schema check) -#}
    {% set target_columns = described.target if described is not none
        else adapter.get_columns_in_relation(target) | map(attribute='name') | list %}
    {% set source_columns = described.source if described is not none
        else adapter.get_columns_in_relation(source) | map(attribute='name') | list %}
    {% set missing = target_columns | reject('in', source_columns) | list %}
    {% set extra = source_columns | reject('in', target_columns + ['_is_deleted']) | list %}
    {% if '_is_deleted' not in source_columns or missing or extra %}
        {{ exceptions.raise_compiler_error(
            "model " ~ target ~ ": its select no longer matches the table (columns missing from the "
            ~ "select: " ~ missing ~ ", new columns: " ~ extra ~ "). Rebuild it with "
            ~ "--full-refresh, or migrate the table first.") }}
    {% endif %}
    {% set explaining = plan.explaining %}
    {% if explaining %}
        {% do backfill_safe.explain_statement('select', staged_from or ('select * from ' ~ source),
            'the model\'s select' ~ (', staged to scratch before the MERGE'
                if staged_from is not none else ', the MERGE\'s source')) %}
    {% endif %}
    {% set merge_from = source %}
    {% set staged_keys = none %}
    {% if staged_from is not none %}
        {#- a model with a declared scope: the staged source's scope keys, which name every
            target row the MERGE can match (a row's unique key determines its scope key), as
            literals below -#}
        {% set by_keys = scope is not none and scope.key in target_columns %}
        {% set literals_max = var('merge_scope_literals_max', 20000) %}
        {% if literals_max is not number or literals_max < 0 %}
            {{ exceptions.raise_compiler_error(
                "var merge_scope_literals_max: a count of keys, not '" ~ literals_max ~ "'") }}
        {% endif %}
        {% set probe = ("select distinct " ~ scope.key ~ " from " ~ merge_from ~ " limit "
            ~ (literals_max + 1)) if by_keys
            else "select 1 from " ~ merge_from ~ " limit 1" %}
        {% set probed = run_query(probe).rows %}
        {% if probed | length == 0 %}
            {% if explaining %}
                {% do backfill_safe.explain_statement('merge', none,
                    'no row of the table changes: no MERGE runs') %}
            {% endif %}
            {#- the main statement must be one: a select that reads and writes nothing -#}
            {{ return("select 'nothing to merge' as merge_skipped") }}
        {% endif %}
        {% if by_keys and probed | length <= literals_max %}
            {#- sorted as values, then written as literals; a null key matches no row -#}
            {% set staged_keys = [] %}
            {% for value in probed | map(attribute=0) | reject('none') | sort %}
                {% do staged_keys.append(backfill_safe.sql_literal(value)) %}
            {% endfor %}
        {% endif %}
    {% endif %}
    {% set partitions = none %}
    {#- a run applying deltas (additive_deltas) touches the groups its changes since its mark
        reach, which the scope's keys since its last run need not hold: its staged keys prune -#}
    {% set deltas = backfill_safe.invocation_store('delta_runs').get(target.identifier) %}
    {% if scope is not none and not deltas %}
        {% set partitions = backfill_safe.scope_event_dates(
            'DBT_INTERNAL_DEST.' ~ plan.declared.event_date) %}
    {% endif %}
    {#- what the MERGE will change, recorded for the models that read this one's changes -#}
    {% do backfill_safe.record_model_changes(target, merge_from, unique_key,
        backfill_safe.scope_event_dates(plan.declared.event_date)
        if partitions else none, version_column) %}
    {% set guard = (" and DBT_INTERNAL_SOURCE." ~ version_column
        ~ " >= DBT_INTERNAL_DEST." ~ version_column) if version_column else "" %}
    {% set merge %}
    merge into {{ target }} as DBT_INTERNAL_DEST
    using {{ merge_from }} as DBT_INTERNAL_SOURCE
    on DBT_INTERNAL_SOURCE.{{ unique_key }} = DBT_INTERNAL_DEST.{{ unique_key }}
    {%- for predicate in incremental_predicates or [] %}
        and ({{ predicate }})
    {%- endfor %}
    {%- if partitions %}
        and ({{ partitions }})
    {%- endif %}
    {%- if staged_keys %}
        and DBT_INTERNAL_DEST.{{ scope.key }} in ({{ staged_keys | join(', ') }})
    {%- endif %}
    when matched and DBT_INTERNAL_SOURCE._is_deleted{{ guard }} then delete
    when matched and not DBT_INTERNAL_SOURCE._is_deleted{{ guard }} then update set
    {%- for column in target_columns %}
        {{ column }} = DBT_INTERNAL_SOURCE.{{ column }}{{ "," if not loop.last }}
    {%- endfor %}
    when not matched and not DBT_INTERNAL_SOURCE._is_deleted then insert (
        {{ target_columns | join(', ') }}
    ) values (
    {%- for column in target_columns %}
        DBT_INTERNAL_SOURCE.{{ column }}{{ "," if not loop.last }}
    {%- endfor %}
    )
    {% endset %}
    {% if explaining %}
        {% do backfill_safe.explain_statement('merge', merge,
            (staged_keys | length) ~ ' scope keys as literals' if staged_keys else none) %}
        {{ return("select 'explained, not merged' as merge_skipped") }}
    {% endif %}
    {{ return(merge) }}
{% endmacro %}
