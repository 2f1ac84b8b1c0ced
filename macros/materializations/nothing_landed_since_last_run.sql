{#- True when this daily run of the model can change nothing: every input of the model is a
    landed source or an Iceberg table (input_relations), no source has a version landed after
    the model's landing bound (incremental_landed_bound: its last committed run's start, less
    the overlap margin) and no table changed after it (a metadata file written: every commit,
    and a branch published or a rollback, which move the table to an older snapshot, too).
    Such a model's run reads as changes only versions landed after that bound, and its tables
    read as they did in that run, so its scope is empty: guarded_merge_sql then stages no
    source and runs no MERGE, and advance_watermark records nothing (the watermark cannot move,
    and the next run's landing bound may stay the older start: nothing landed in between).
    Before, a dimension spent seconds of a daily run on which only orders had landed, finding
    nothing to merge, and a model that joins a seed to a source re-read the seed and committed
    a watermark on every run (docs/benchmarks/history.md).
    A change of any kind counts (compaction, a property, a seed loaded again unchanged): the run
    is then made as usual, which is only slower. Vars and the clock are not inputs: a model
    whose rows depend on them beside its inputs is idle when only they change (as a model over
    sources always was); `--full-refresh` rebuilds it. False (run as usual) on a full build, a
    backfill, a dual run, without a recorded start, and for a model with another input (a
    table not of Iceberg; vars only: a calendar). -#}
{% macro nothing_landed_since_last_run() %}
    {% set plan = backfill_safe.run_plan() %}
    {% if not plan.incremental or plan.window is not none or plan.dual_run_model is not none %}
        {{ return(false) }}
    {% endif %}
    {#- a model whose changes are models of the kind: nothing recorded by them since (one that
        names landed sources beside them: its inputs, as any model's, below) -#}
    {% set scope = plan.scope %}
    {% if plan.declared is not none and plan.declared.only_models %}
        {#- a model maintained by deltas whose table holds a mark: nothing recorded since it
            (the statement its run would read them with, additive_deltas) -#}
        {% set since_mark = backfill_safe.nothing_since_mark(plan) %}
        {{ return(since_mark if since_mark is not none
            else backfill_safe.nothing_changed_upstream(scope)) }}
    {% endif %}
    {% set inputs = backfill_safe.input_relations(model.unique_id) %}
    {% if inputs is none %}
        {{ return(false) }}
    {% endif %}
    {% set bound_at = backfill_safe.incremental_landed_bound_at() %}
    {% if bound_at is none %}
        {{ return(false) }}
    {% endif %}
    {% set bound = backfill_safe.timestamp_literal(bound_at) %}
    {#- the sources: one read per invocation, shared by the models of the run -#}
    {% set latest = backfill_safe.latest_landed(bound_at, inputs.sources) %}
    {% set after = bound_at.strftime("%Y-%m-%d %H:%M:%S.%f") %}
    {% for source_id in inputs.sources
        if latest[source_id] is not none and latest[source_id] > after %}
        {{ return(false) }}
    {% endfor %}
    {#- a table's metadata log, not its snapshots: a publish fast-forwards to a snapshot
        committed before the bound; no data file is read. Asked at the model's turn: a table
        of the invocation (a seed, a model upstream) may change before it. -#}
    {% set probes = [] %}
    {% for relation in inputs.tables %}
        {% do probes.append("(select 1 as landed from " ~ relation ~ ".metadata_log_entries"
            ~ " where timestamp > " ~ bound ~ " limit 1)") %}
    {% endfor %}
    {% if not probes %}
        {{ return(true) }}
    {% endif %}
    {#- memoized: the MERGE and the post-hook get the same answer -#}
    {% set landed = backfill_safe.memoized_rows(
        "select count(*) from (" ~ probes | join(" union all ") ~ ") as probes")[0][0] %}
    {{ return(landed == 0) }}
{% endmacro %}


{#- The latest version landed in each landed source of the selected models of the kind
    (input_relations) and in `wanted` (source unique_ids), after the earliest landing bound of
    those models and `bound_at` (a datetime; incremental_landed_bound_at): {unique_id: its
    latest `_loaded_at`, formatted 'yyyy-MM-dd HH:mm:ss.SSSSSS', or none when nothing landed
    after that bound}. One query per invocation (memoized_rows), where each model sent its own
    probe of its sources, and several models read the same source; Iceberg reads only the files whose `_loaded_at`
    range reaches past the bound. Asked once for the run: a version landed after the read and
    before a model's turn finds the model idle, and an idle run records no start, so the next
    run's bound still reaches it. -#}
{% macro latest_landed(bound_at, wanted) %}
    {% set known = backfill_safe.invocation_store('latest_landed') %}
    {% if 'sources' not in known %}
        {% set sources = [] %}
        {% set bounds = [] %}
        {% for unique_id in selected_resources %}
            {% set node = graph.nodes.get(unique_id) %}
            {% set inputs = backfill_safe.input_relations(unique_id) if node is not none
                and node.resource_type == 'model' and backfill_safe.is_framework_model(node) else none %}
            {% if inputs is not none and inputs.sources %}
                {% do sources.extend(inputs.sources) %}
                {% set recorded = backfill_safe.incremental_landed_bound_at(node.alias) %}
                {% if recorded is not none %}
                    {% do bounds.append(recorded) %}
                {% endif %}
            {% endif %}
        {% endfor %}
        {% do known.update({'sources': sources, 'since': (bounds | min) if bounds else none}) %}
    {% endif %}
    {% set since = known.since if known.since is not none and known.since <= bound_at
        else bound_at %}
    {% set reads = [] %}
    {% for source_id in (known.sources + wanted) | unique | sort %}
        {% do reads.append("select '" ~ source_id ~ "' as source_id, date_format(max(_loaded_at), "
            ~ "'yyyy-MM-dd HH:mm:ss.SSSSSS') as latest from "
            ~ graph.sources[source_id].relation_name ~ " where _loaded_at > "
            ~ backfill_safe.timestamp_literal(since)) %}
    {% endfor %}
    {% set latest = {} %}
    {% for row in backfill_safe.memoized_rows(reads | join("\nunion all\n")) %}
        {% do latest.update({row[0]: row[1]}) %}
    {% endfor %}
    {{ return(latest) }}
{% endmacro %}


{#- What a node reads, directly or through views and ephemeral models: {'sources': the
    landed sources (each declares a `_loaded_at` column), 'tables': the relations of the seeds,
    snapshots and models materialized as tables of file format iceberg (their metadata log
    tells when they last changed)}; none when any input is something else (a source without
    `_loaded_at`, a table not of Iceberg), or when it reads nothing at all. -#}
{% macro input_relations(unique_id) %}
    {% set found = {'sources': [], 'tables': []} %}
    {% set pending = [unique_id] %}
    {% set seen = [] %}
    {#- breadth-first over the parents (Jinja has no while: the list grows as it is walked) -#}
    {% for node_id in pending %}
        {% set node = graph.nodes.get(node_id) %}
        {% for parent in node.depends_on.nodes if parent not in seen %}
            {% do seen.append(parent) %}
            {% if parent.startswith('source.') %}
                {% if '_loaded_at' not in graph.sources[parent].columns %}
                    {{ return(none) }}
                {% endif %}
                {% do found.sources.append(parent) %}
            {% else %}
                {% set upstream = graph.nodes.get(parent) %}
                {% if upstream is none %}
                    {{ return(none) }}
                {% elif upstream.resource_type == 'model'
                    and upstream.config.materialized in ('view', 'ephemeral') %}
                    {% do pending.append(parent) %}
                {% elif upstream.resource_type in ('model', 'seed', 'snapshot')
                    and upstream.config.file_format == 'iceberg' and upstream.relation_name %}
                    {% do found.tables.append(upstream.relation_name) %}
                {% else %}
                    {{ return(none) }}
                {% endif %}
            {% endif %}
        {% endfor %}
    {% endfor %}
    {{ return(found if found.sources or found.tables else none) }}
{% endmacro %}

{#- The sources a node reads, directly or through views and ephemeral models, when all its
    inputs are landed sources (input_relations); an empty list when any input is something
    else (a seed, a snapshot, a table or incremental model, whose changes no landing shows) or
    when it reads no source at all. -#}
{% macro landed_inputs(unique_id) %}
    {% set inputs = backfill_safe.input_relations(unique_id) %}
    {{ return(inputs.sources if inputs is not none and not inputs.tables else []) }}
{% endmacro %}
