{#- Rule 2, in two steps: this post-hook of every model of the kind notes the model's advance,
    and commit_watermarks (on-run-end) writes the advances of every model that succeeded in one
    MERGE into the watermark table. The advance moves the model's watermark to the greatest
    update timestamp among the rows of its upstream sources that had landed before this dbt
    invocation started (`_loaded_at <= run_started_at`) and are loadable: exactly the versions
    the staging loads (landed_versions, on screened_versions: every row rule, the
    conflicting-versions rule and the clock-skew rule, one definition for all three). Those
    rows were all visible to the model's MERGE, so the watermark never passes a row that was
    not loaded: neither a version stamped in the future by a source clock running ahead nor
    versions quarantined as conflicting can drag it there (watermark_drift checks it). dbt runs post-hooks only after the main statement
    succeeded: a failed MERGE notes nothing, and commit_watermarks writes only the advances of
    models whose result is a success. The watermark never moves back.
    One MERGE per invocation instead of one per model: each is an Iceberg commit of the watermark
    table; and each source read once in it, whichever models read it (watermark_advances_sql)
    (docs/benchmarks/history.md). A process killed between a model's MERGE and the end of the invocation leaves that
    model's watermark where it was: the next run reads the same changes again and its MERGE changes nothing it already
    holds (rule 3), so nothing is lost or doubled. Inside the invocation the model's tests see
    the advanced watermark all the same (pending_watermark_sql, read by unreflected_changes).
    The update timestamp of a source is its freshness `loaded_at_field` (updated_at here).
    The sources are watermark_sources' (config `meta: {watermark_exclude: [...]}` leaves out
    sources a model reads for something other than its changes).
    Notes nothing (renders no statement) for a model not of the framework's kind (is_framework_model:
    a plain model that shares the folder's hooks), for a model without sources, and in a backfill (vars
    backfill_start/backfill_end): a backfill restates history and never moves the daily
    pipeline's watermark; nor for the scratch build of a dual-run comparison (var
    dual_run_model), nor for `pipeline explain` (var explain_next_run), nor when no input
    landed anything since the last run started (nothing_landed_since_last_run). Only rows above the stored watermark are read (they alone
    can move it).
    The commit also records when this invocation started (`last_run_started_at`), moved or not: every
    version landed by then was in reach of this committed run (changed_versions_predicate).
    A pipeline whose sources hold no loadable row yet gets its row all the same, with a null
    watermark_ts (no watermark: its next run still reads every row) and that start: without it,
    nothing_landed_since_last_run could never skip it, and a model on a source nothing has
    landed in yet (the second example, in the shop's benchmark) redid its whole staging and
    MERGE on every run, for nothing. -#}
{% macro advance_watermark() %}
    {% set plan = backfill_safe.run_plan() %}
    {% if plan.declared is none or plan.window is not none or plan.dual_run_model is not none
        or plan.explaining %}
        {{ return('') }}
    {% endif %}
    {#- nothing landed since the last run started: the watermark cannot move, and that start
        can stay the next run's landing bound -#}
    {% if backfill_safe.nothing_landed_since_last_run() %}
        {{ return('') }}
    {% endif %}
    {#- a model whose changes are only models of the kind reads no landed version itself: only
        its run's start is recorded (its next run's landing bound), with no watermark (one that
        names landed sources beside them: theirs, below) -#}
    {% if plan.declared.only_models %}
        {% do backfill_safe.pending_watermarks().update({this.identifier: "select '"
            ~ backfill_safe.validated_identifier(this.identifier) ~ "' as pipeline_name, "
            ~ "cast(null as timestamp) as loaded_through"}) %}
        {{ return('') }}
    {% endif %}
    {% set sources = backfill_safe.watermark_sources(graph.nodes[model.unique_id]) %}
    {% if sources | length == 0 %}
        {{ return('') }}
    {% endif %}
    {#- only rows above the stored watermark can move it (it never moves back): Iceberg skips
        the files whose update times are all below it, instead of every run reading all history -#}
    {% do backfill_safe.pending_watermarks().update({this.identifier: {
        'sources': sources, 'current': backfill_safe.get_watermark(this.identifier)}}) %}
    {{ return('') }}
{% endmacro %}


{#- The select of the new watermarks (pipeline_name, loaded_through) of the models whose
    advances are noted in `pending` (model's table name -> what advance_watermark noted): for a
    model over sources, the greatest update time among its sources' loadable versions landed
    by this invocation's start (run_started_at) and above its stored watermark; for a model over
    models, none. Each source is read once, whichever models read it (a daily run of the shop
    read raw.orders for four models), above the lowest stored watermark of its readers: for a
    reader whose watermark is higher the source's greatest update time is the same whenever it
    is above that watermark, and one below it cannot move it (commit_watermarks moves a
    watermark only up). -#}
{% macro watermark_advances_sql(pending) %}
    {% set cutoff = backfill_safe.timestamp_literal(run_started_at) %}
    {% set reads = [] %}
    {% set fixed = [] %}
    {% set lowest = {} %}
    {% set order = [] %}
    {% for name, entry in pending.items() | sort %}
        {% if entry is string %}
            {% do fixed.append(entry) %}
        {% else %}
            {% for source_name, table in entry.sources %}
                {% set key = source_name ~ '.' ~ table %}
                {% do reads.append((name, key)) %}
                {% if key not in lowest %}
                    {% do order.append((key, source_name, table)) %}
                    {% do lowest.update({key: entry.current}) %}
                {% elif lowest[key] is not none %}
                    {% do lowest.update({key: none if entry.current is none
                        else [lowest[key], entry.current] | min}) %}
                {% endif %}
            {% endfor %}
        {% endif %}
    {% endfor %}
    {% set parts = fixed[:] %}
    {% if reads %}
        {% set per_source = [] %}
        {% for key, source_name, table in order %}
            {%- set contract = backfill_safe.landing_contract(source_name, table) %}
            {%- set landed -%}
                _loaded_at <= {{ cutoff }}
                {%- if lowest[key] is not none %}
                and {{ contract.update_column }} > {{ backfill_safe.timestamp_literal(lowest[key]) }}
                {%- endif %}
            {%- endset %}
            {% do per_source.append("select '" ~ key ~ "' as source_key, max(updated_at) as loaded_through"
                ~ " from (" ~ backfill_safe.landed_versions(source_name, table, keep='valid', where=landed)
                ~ ") as loadable") %}
        {% endfor %}
        {% set pairs = [] %}
        {% for name, key in reads %}
            {% do pairs.append("('" ~ backfill_safe.validated_identifier(name) ~ "', '" ~ key ~ "')") %}
        {% endfor %}
        {% do parts.append("select reads.pipeline_name, max(per_source.loaded_through) as loaded_through"
            ~ " from (values " ~ pairs | join(', ') ~ ") as reads (pipeline_name, source_key)"
            ~ " left join (" ~ per_source | join(' union all ') ~ ") as per_source"
            ~ " on per_source.source_key = reads.source_key group by reads.pipeline_name") %}
    {% endif %}
    {{ return(parts | join('\n        union all\n')) }}
{% endmacro %}


{#- on-run-end, before record_runs: one MERGE into the watermark table of the advances noted by
    advance_watermark for every model whose result is a success (rule 2), and the invocation's
    start as each one's `last_run_started_at`. Nothing when none was noted (a backfill, a dual
    run, a run of plain models, a run in which nothing landed). Then the pending advances are
    cleared and this invocation's memoized answers forgotten: whatever runs after reads the
    watermarks as committed. -#}
{% macro commit_watermarks(results) %}
    {% if not execute %}
        {{ return('') }}
    {% endif %}
    {% set pending = backfill_safe.pending_watermarks() %}
    {% set advances = {} %}
    {% for result in results
        if result.node.resource_type == 'model' and result.status == 'success'
        and result.node.alias in pending %}
        {% do advances.update({result.node.alias: pending[result.node.alias]}) %}
    {% endfor %}
    {% do pending.clear() %}
    {% if advances | length == 0 %}
        {{ return('') }}
    {% endif %}
    {% do backfill_safe.forget_memoized_rows() %}
    {% set cutoff = backfill_safe.timestamp_literal(run_started_at) %}
    merge into {{ backfill_safe.watermark_relation() }} as target
    using (
        {{ backfill_safe.watermark_advances_sql(advances) }}
    ) as source
    on target.pipeline_name = source.pipeline_name
    when matched and source.loaded_through is not null
        and (target.watermark_ts is null or source.loaded_through > target.watermark_ts) then update set
        target.previous_watermark_ts = target.watermark_ts,
        target.watermark_ts = source.loaded_through,
        target.invocation_id = '{{ invocation_id }}',
        target.advanced_at = current_timestamp(),
        target.last_run_started_at = {{ cutoff }}
    when matched then update set
        target.last_run_started_at = {{ cutoff }}
    when not matched then insert (
        pipeline_name, watermark_ts, previous_watermark_ts, invocation_id, advanced_at,
        last_run_started_at
    ) values (
        source.pipeline_name, source.loaded_through, null, '{{ invocation_id }}',
        case when source.loaded_through is not null then current_timestamp() end,
        {{ cutoff }}
    )
{% endmacro %}


{#- The advances advance_watermark noted in this invocation and commit_watermarks has not
    written yet: a dict from the model's table name to the select of its new watermark
    (pipeline_name, loaded_through), in invocation_store. -#}
{% macro pending_watermarks() %}
    {{ return(backfill_safe.invocation_store('pending_watermarks')) }}
{% endmacro %}


{#- The select of a model's advance noted in this invocation and not yet committed
    (pending_watermarks), or none: a test of the model in the same `dbt build` reads the
    watermark as it will be once the invocation ends (unreflected_changes). -#}
{% macro pending_watermark_sql(pipeline_name) %}
    {% if not execute %}
        {{ return(none) }}
    {% endif %}
    {% set entry = backfill_safe.pending_watermarks().get(pipeline_name) %}
    {{ return(none if entry is none
        else backfill_safe.watermark_advances_sql({pipeline_name: entry})) }}
{% endmacro %}
