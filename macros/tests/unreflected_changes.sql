{#- The late-beyond-the-window rows of an incremental model: keys whose row in `expected_model`
    (the model's current-state view: every column of the table plus `is_deleted`, one row per
    key ever seen, no incremental logic) is not the row `model` holds, and that the next daily
    run will not pick up. The window start (the stored watermark minus the domain's lookback) is
    read from the watermark table in SQL, so a view built on this stays right as the watermark
    moves (in a test run by the same `dbt build` as the model, the advance its run noted:
    advance_watermark). Without a watermark every difference is listed.
    A key differs when it is live in the current state but absent from the table ('missing'),
    deleted there but present in the table ('not deleted'), or present with any column that is
    not the current state's ('stale'; compared null-safe over every column of the table, as
    rows_to_merge does, and named in `differing_columns`). Content, not `updated_at`: a row's
    `updated_at` is the greatest of its inputs' update times, so a late version of one input is
    hidden when another input of the same row changed later inside the window and was loaded
    (a sibling line's deletion raises the order's `updated_at`; a header change raises its
    lines'): the row's `updated_at` is then already the table's, and only its content tells.
    A difference the next daily run will fix is left out: the current state's `updated_at` is
    after the window start and after the table's (a change inside the window not loaded yet:
    the next run recomputes the whole key, its late inputs too).
    `horizon_days` keeps only rows whose event date (current or loaded) is within that many days
    of the watermark. `window_days` (the model's restatement window, restatement_window_days)
    flags the rows whose event dates, current and loaded, are all older than that many days
    before the watermark's date: beyond_restatement_window, held until signed off.
    Columns: model_name, unique_key (as a string), problem, differing_columns,
    source_updated_at, loaded_updated_at, event_date (current state), loaded_event_date,
    restate_date, restatement_window_days (null without `window_days`),
    beyond_restatement_window. `columns`: the table's columns when the caller has read them
    (else read here). -#}
{% macro unreflected_changes(model, expected_model, unique_key, domain, model_name,
                             date_column, horizon_days=none, columns=none, window_days=none) %}
{%- if columns is not none %}
    {#- the caller has read them already (unreflected_changes_view) -#}
{%- elif execute %}
    {%- set columns = backfill_safe.column_names(model) %}
{%- else %}
    {%- set columns = [unique_key, date_column, 'updated_at'] %}
{%- endif %}
{%- for required in [unique_key, date_column, 'updated_at'] %}
    {%- if execute and required not in columns %}
        {{ exceptions.raise_compiler_error(
            "unreflected_changes: model " ~ model_name ~ " (" ~ model ~ ") has no column '"
            ~ required ~ "'; its columns: " ~ columns) }}
    {%- endif %}
{%- endfor %}

with

{%- set pending = backfill_safe.pending_watermark_sql(model_name) %}
watermark as (
    {%- if pending is none %}
    select max(watermark_ts) as watermark_ts
    {%- else %}
    {#- a test in the same `dbt build` as the model's run: the watermark its run advanced, which
        commit_watermarks writes when the invocation ends -#}
    select greatest(max(watermark_ts), (select loaded_through from ({{ pending }}) as advance)) as watermark_ts
    {%- endif %}
    from {{ backfill_safe.watermark_relation() }}
    where pipeline_name = '{{ backfill_safe.validated_identifier(model_name) }}'
),

bounds as (
    select
        watermark_ts
        - make_dt_interval({{ backfill_safe.lookback_days(domain, model_name) }}, 0, 0, 0) as window_start,
        {%- if horizon_days is not none %}
        date_sub(cast(watermark_ts as date), {{ horizon_days | int }}) as horizon_start,
        {%- else %}
        cast(null as date) as horizon_start,
        {%- endif %}
        {%- if window_days is not none %}
        date_sub(cast(watermark_ts as date), {{ window_days | int }}) as restatement_start
        {%- else %}
        cast(null as date) as restatement_start
        {%- endif %}
    from watermark
),

expected as (
    select
        {%- for column in columns %}
        {{ column }},
        {%- endfor %}
        is_deleted
    from {{ expected_model }}
),

actual as (
    select
        {%- for column in columns %}
        {{ column }}{{ "," if not loop.last }}
        {%- endfor %}
    from {{ model }}
),

compared as (
    select
        expected.{{ unique_key }} as key_value,
        expected.is_deleted,
        actual.{{ unique_key }} is not null as is_loaded,
        expected.updated_at as source_updated_at,
        actual.updated_at as loaded_updated_at,
        expected.{{ date_column }} as event_date,
        actual.{{ date_column }} as loaded_event_date,
        {{ backfill_safe.differing_columns(columns) }} as differing_columns
    from expected
    left join actual
        on expected.{{ unique_key }} = actual.{{ unique_key }}
),

unreflected as (
    select
        '{{ model_name }}' as model_name,
        cast(compared.key_value as string) as unique_key,
        case
            when not compared.is_deleted and not compared.is_loaded then 'missing'
            when compared.is_deleted and compared.is_loaded then 'not deleted'
            else 'stale'
        end as problem,
        case
            when compared.is_loaded and not compared.is_deleted then compared.differing_columns
        end as differing_columns,
        compared.source_updated_at,
        compared.loaded_updated_at,
        compared.event_date,
        compared.loaded_event_date,
        coalesce(compared.event_date, compared.loaded_event_date) as restate_date
    from compared
    cross join bounds
    where
        (
            (not compared.is_deleted and not compared.is_loaded)
            or (compared.is_deleted and compared.is_loaded)
            or (not compared.is_deleted and compared.differing_columns <> '')
        )
        -- a change inside the window that the next daily run will load (and with it the key's
        -- late inputs: it recomputes the whole key)
        and not coalesce(
            compared.source_updated_at > bounds.window_start
            and (
                compared.loaded_updated_at is null
                or compared.source_updated_at > compared.loaded_updated_at
            ),
            false
        )
)

select
    unreflected.*,
    {{ backfill_safe.restatement_window_columns(window_days, 'bounds.restatement_start',
        'unreflected.restate_date', 'unreflected.loaded_event_date') }}
from unreflected
cross join bounds
where
    bounds.horizon_start is null
    or unreflected.restate_date >= bounds.horizon_start
    or unreflected.loaded_event_date >= bounds.horizon_start

{% endmacro %}


{#- unreflected_changes of a model whose scope's changes are models of the kind (`scope`,
    scope_model_changes): the keys whose live row in `expected_model` (its current state,
    computed from its upstream tables) is not the row `model` holds, in both directions (a
    row the current state no longer gives, a group that lost all its rows, is 'not deleted'),
    left out those the model's next run will recompute: the keys of the changes its upstream
    models recorded since its landing bound (model_scope_keys_select's daily keys; in a test of
    the same `dbt build` as the model's run, since that run's start), or every key when an
    upstream was rebuilt since or the model has no recorded run. `behind` (the audit view)
    lists those too, problem 'behind': the model did not run since its upstream changed them
    (skipped after a failed test, failed, not selected), with since when (source_updated_at:
    the first upstream run it has not read); a key its next run recomputes but that holds its
    current state already (a restatement recomputed it) is not listed. No update time is compared:
    the table holds none it needs. Same columns as unreflected_changes (the update times
    null); the restatement window counts back from the latest event date the table holds (a
    model with no event date, `date_column` none: its rows have none, and none is beyond the
    window). -#}
{% macro unreflected_changes_over_models(model, expected_model, unique_key, model_name,
                                         date_column, scope, horizon_days=none, columns=none,
                                         window_days=none, behind=false) %}
{%- if columns is none %}
    {%- set columns = backfill_safe.column_names(model)
        if execute else [unique_key] + ([date_column] if date_column else []) %}
{%- endif %}
{#- a model with no event date: its rows have none (restated by key) -#}
{%- set current_date_sql = ('expected.' ~ date_column) if date_column else 'cast(null as date)' %}
{%- set loaded_date_sql = ('actual.' ~ date_column) if date_column else 'cast(null as date)' %}
{%- set pending = backfill_safe.pending_watermark_sql(model_name) %}
{%- set recorded = backfill_safe.recorded_change_tables() if execute else [] %}
{%- set upstreams = scope.models | selectattr('changes') | list %}
with

bound as (
    select
        {%- if pending is not none %}
        {#- a test in the same `dbt build` as the model's run: that run's start, which
            commit_watermarks records when the invocation ends #}
        {{ backfill_safe.timestamp_literal(run_started_at) }}
        {%- else %}
        max(last_run_started_at)
        {%- endif %}
        - make_dt_interval(0, 0, {{ backfill_safe.landing_overlap_minutes() }}, 0) as since
    {%- if pending is none %}
    from {{ backfill_safe.watermark_relation() }}
    where pipeline_name = '{{ backfill_safe.validated_identifier(model_name) }}'
    {%- endif %}
),

pending_changes as (
    {%- for upstream in upstreams if upstream.changes | lower in recorded %}
    select _change, {{ upstream.column }} as key_value, _run_started_at
    from {{ upstream.changes }}
    cross join bound
    where bound.since is null or _run_started_at > bound.since
    union all
    {%- endfor %}
    -- no recorded run: the next run recomputes every key
    select 'rebuilt' as _change, cast(null as string) as key_value,
        cast(null as timestamp) as _run_started_at
    from bound
    where bound.since is null
),

pending_keys as (
    select
        cast(key_value as string) as key_value,
        min(_run_started_at) as since
    from pending_changes
    where _change <> 'rebuilt' and key_value is not null
    group by cast(key_value as string)
),

rebuilt as (
    select min(_run_started_at) as since, count(*) > 0 as is_rebuilt
    from pending_changes
    where _change = 'rebuilt'
),


expected as (
    select
        {%- for column in columns %}
        {{ column }}{{ "," if not loop.last }}
        {%- endfor %}
    from {{ expected_model }}
    where not is_deleted
),

actual as (
    select
        {%- for column in columns %}
        {{ column }}{{ "," if not loop.last }}
        {%- endfor %}
    from {{ model }}
),

compared as (
    select
        coalesce(expected.{{ unique_key }}, actual.{{ unique_key }}) as key_value,
        coalesce(expected.{{ scope.key }}, actual.{{ scope.key }}) as scope_key,
        expected.{{ unique_key }} is not null as is_expected,
        actual.{{ unique_key }} is not null as is_loaded,
        {{ current_date_sql }} as event_date,
        {{ loaded_date_sql }} as loaded_event_date,
        {{ backfill_safe.differing_columns(columns) }} as differing_columns
    from expected
    full outer join actual
        on expected.{{ unique_key }} = actual.{{ unique_key }}
)

select
    '{{ model_name }}' as model_name,
    cast(compared.key_value as string) as unique_key,
    case
        {%- if behind %}
        -- the next run recomputes it: it differs because the model has not run since its
        -- upstream changed (skipped, failed or not selected)
        when rebuilt.is_rebuilt or pending_keys.key_value is not null then 'behind'
        {%- endif %}
        when not compared.is_loaded then 'missing'
        when not compared.is_expected then 'not deleted'
        else 'stale'
    end as problem,
    case when compared.is_loaded and compared.is_expected then compared.differing_columns end
        as differing_columns,
    -- for a row behind: since when (the first upstream run it has not read)
    {{ 'coalesce(pending_keys.since, rebuilt.since)' if behind else 'cast(null as timestamp)' }}
        as source_updated_at,
    cast(null as timestamp) as loaded_updated_at,
    compared.event_date,
    compared.loaded_event_date,
    coalesce(compared.event_date, compared.loaded_event_date) as restate_date,
    {{ backfill_safe.restatement_window_columns(window_days, 'latest.restatement_start',
        'coalesce(compared.event_date, compared.loaded_event_date)', 'compared.loaded_event_date') }}
from compared
cross join rebuilt
left join pending_keys
    on cast(compared.scope_key as string) = pending_keys.key_value
cross join (
    {#- the window's start from the latest event date the table holds (no watermark) #}
    {%- if window_days is not none and date_column %}
    select date_sub(max({{ date_column }}), {{ window_days | int }}) as restatement_start
    from {{ model }}
    {%- else %}
    select cast(null as date) as restatement_start
    {%- endif %}
) as latest
where
    (not compared.is_loaded or not compared.is_expected or compared.differing_columns <> '')
    {%- if not behind %}
    -- the next run recomputes these keys (or every key)
    and not rebuilt.is_rebuilt
    and pending_keys.key_value is null
    {%- endif %}
    {%- if horizon_days is not none %}
    -- within the horizon of the latest event date the table holds
    and coalesce(compared.event_date, compared.loaded_event_date) >= (
        select date_sub(max({{ date_column }}), {{ horizon_days | int }}) from {{ model }}
    )
    {%- endif %}

{% endmacro %}


{#- The two columns unreflected_changes and unreflected_changes_over_models end with:
    restatement_window_days (`window_days`, or null) and beyond_restatement_window, true when
    the window's start (`start`, a date expression; null: no watermark yet) is after both the
    row's restate date and its loaded event date (SQL expressions). -#}
{% macro restatement_window_columns(window_days, start, restate_date, loaded_event_date) %}
    {%- if window_days is not none -%}
    cast({{ window_days | int }} as int) as restatement_window_days,
    {{ start }} is not null
    and not coalesce({{ restate_date }} >= {{ start }}, false)
    and not coalesce({{ loaded_event_date }} >= {{ start }}, false)
        as beyond_restatement_window
    {%- else -%}
    cast(null as int) as restatement_window_days,
    false as beyond_restatement_window
    {%- endif -%}
{% endmacro %}
