{#- Watermark drift, the failure a high-water mark must never have: a model's stored watermark
    later than every loadable version that could have set it, so its next window starts past
    versions that never loaded (a version landed later with an update time in that gap is then
    treated as late beyond the window). The invariant: a watermark is the greatest update time
    among the loadable versions of its sources (watermark_sources; loadable as landed_versions
    screens them for the staging) landed before the run that committed it started, so at least
    one such version, landed by the pipeline's `last_run_started_at`, has an update time at or
    after it. A select of the models that break it, one row per quarantined version responsible
    (landed by then, its update time after the greatest loadable one and at or before the
    watermark: the versions a screening that disagreed with the staging's would have counted),
    or one row with no version when none is (a watermark moved by hand): the model, its
    watermark, the greatest loadable update time from `scanned_from` on (null: none), and the
    version's source, key, reason, update time and file. No row when every watermark holds.
    What it reads, with literal bounds so Iceberg skips by the raw tables' update-time
    partitions: each model's sources' versions from its previous watermark on (the greatest
    loadable update time is found there whenever the last advance was sound), landed by its
    last run's start. Read by the data test no_watermark_drift (every model of the kind, no
    yml), `pipeline status` and the status page (pipeline.drift). Nothing before a framework
    model ever ran (no watermark table). -#}
{% macro watermark_drift() %}
    {%- set parts = backfill_safe.watermark_drift_parts() if execute else [] %}
    {%- if not parts %}
    select
        cast(null as string) as model_name,
        cast(null as timestamp) as watermark_ts,
        cast(null as timestamp) as greatest_loadable_updated_at,
        cast(null as timestamp) as scanned_from,
        cast(null as string) as source_name,
        cast(null as string) as source_table,
        cast(null as string) as record_key,
        cast(null as string) as reason,
        cast(null as timestamp) as updated_at,
        cast(null as string) as _source_file
    where false
    {%- else %}
        {%- for part in parts %}
            {%- if not loop.first %}
    union all
            {%- endif %}
    select * from (
        {{ part }}
    ) as drift_{{ loop.index }}
        {%- endfor %}
    {%- endif %}
{%- endmacro %}


{#- watermark_drift's select, one per model of the kind with a stored watermark and sources,
    each whole (its versions in a CTE of its own): `pipeline status` reads them a few at a time
    (pipeline.drift), since one plan of every model's versions grows faster than the models. -#}
{% macro watermark_drift_parts() %}
    {%- set watermarks = adapter.get_relation(
        database=none, schema=var('control_schema', 'control'), identifier='etl_watermark'
    ) if execute else none %}
    {%- set stored = {} %}
    {%- if watermarks is not none %}
        {%- for row in run_query(
                "select pipeline_name, watermark_ts, previous_watermark_ts, last_run_started_at from "
                ~ watermarks ~ " where watermark_ts is not null").rows %}
            {%- do stored.update({row[0]: row}) %}
        {%- endfor %}
    {%- endif %}
    {%- set parts = [] %}
    {%- for node in (graph.nodes.values() if execute else []) | sort(attribute='name')
        if node.resource_type == 'model' and backfill_safe.is_framework_model(node)
        and node.alias in stored %}
        {%- set sources = backfill_safe.watermark_sources(node) %}
        {%- if sources %}
            {%- set _, watermark, previous, last_start = stored[node.alias] %}
            {%- set scanned_from = previous if previous is not none and previous < watermark
                else watermark %}
            {%- set versions = [] %}
            {%- for source_name, table in sources %}
                {%- set contract = backfill_safe.landing_contract(source_name, table) %}
                {%- set update_column = contract.update_column %}
                {%- set where -%}
                    {{ update_column }} >= {{ backfill_safe.timestamp_literal(scanned_from) }}
                    {%- if last_start is not none %}
                    and _loaded_at <= {{ backfill_safe.timestamp_literal(last_start) }}
                    {%- endif %}
                {%- endset %}
                {%- do versions.append(backfill_safe.landed_versions(source_name, table, where=where)) %}
            {%- endfor %}
            {%- set part %}
    with versions as (
        {{ versions | join('\n    union all\n') }}
    )
    select
        '{{ backfill_safe.validated_identifier(node.alias) }}' as model_name,
        {{ backfill_safe.timestamp_literal(watermark) }} as watermark_ts,
        loadable.greatest_loadable_updated_at,
        {{ backfill_safe.timestamp_literal(scanned_from) }} as scanned_from,
        responsible.source_name,
        responsible.source_table,
        responsible.record_key,
        responsible.reason,
        responsible.updated_at,
        responsible._source_file
    from (
        select max(case when reason is null then updated_at end) as greatest_loadable_updated_at
        from versions
    ) as loadable
    left join versions as responsible
        on
            responsible.reason is not null
            and responsible.updated_at <= {{ backfill_safe.timestamp_literal(watermark) }}
            and (
                loadable.greatest_loadable_updated_at is null
                or responsible.updated_at > loadable.greatest_loadable_updated_at
            )
    where
        loadable.greatest_loadable_updated_at is null
        or loadable.greatest_loadable_updated_at < {{ backfill_safe.timestamp_literal(watermark) }}
            {%- endset %}
            {%- do parts.append(part) %}
        {%- endif %}
    {%- endfor %}
    {{ return(parts) }}
{%- endmacro %}
