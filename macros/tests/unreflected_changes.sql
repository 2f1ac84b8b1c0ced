{#- The late-beyond-the-window rows of a fact: keys whose current state in `expected_model` (the
    model's current-state view) is not reflected in `model` and changed at or before the model's
    window start (its stored watermark minus the domain's lookback), so the next daily run will
    not pick them up. The window start is read from the watermark table in SQL, so a view built
    on this stays right as the watermark moves. Without a watermark every difference is listed.
    A key is unreflected when it is live in the current state but absent from the model, deleted
    there but present in the model, or present with an older `updated_at`.
    `horizon_days` keeps only rows whose order date is within that many days of the watermark.
    Columns: model_name, unique_key (as a string), problem, source_updated_at,
    loaded_updated_at, order_date (current state), loaded_order_date, restate_date. -#}
{% macro unreflected_changes(model, expected_model, unique_key, domain, model_name,
                             date_column='order_date', horizon_days=none) %}

with

watermark as (
    select max(watermark_ts) as watermark_ts
    from {{ watermark_relation() }}
    where pipeline_name = '{{ validated_identifier(model_name) }}'
),

bounds as (
    select
        watermark_ts - make_dt_interval({{ lookback_days(domain) }}, 0, 0, 0) as window_start,
        {%- if horizon_days is not none %}
        date_sub(cast(watermark_ts as date), {{ horizon_days | int }}) as horizon_start
        {%- else %}
        cast(null as date) as horizon_start
        {%- endif %}
    from watermark
),

expected as (
    select
        {{ unique_key }},
        {{ date_column }},
        updated_at,
        is_deleted
    from {{ expected_model }}
    cross join bounds
    where bounds.window_start is null or updated_at <= bounds.window_start
),

actual as (
    select
        {{ unique_key }},
        {{ date_column }},
        updated_at
    from {{ model }}
),

unreflected as (
    select
        '{{ model_name }}' as model_name,
        cast(expected.{{ unique_key }} as string) as unique_key,
        case
            when not expected.is_deleted and actual.{{ unique_key }} is null then 'missing'
            when expected.is_deleted and actual.{{ unique_key }} is not null then 'not deleted'
            else 'stale'
        end as problem,
        expected.updated_at as source_updated_at,
        actual.updated_at as loaded_updated_at,
        expected.{{ date_column }} as order_date,
        actual.{{ date_column }} as loaded_order_date,
        coalesce(expected.{{ date_column }}, actual.{{ date_column }}) as restate_date
    from expected
    left join actual
        on expected.{{ unique_key }} = actual.{{ unique_key }}
    where
        (not expected.is_deleted and actual.{{ unique_key }} is null)
        or (expected.is_deleted and actual.{{ unique_key }} is not null)
        or (not expected.is_deleted and actual.updated_at < expected.updated_at)
)

select unreflected.*
from unreflected
cross join bounds
where
    bounds.horizon_start is null
    or unreflected.restate_date >= bounds.horizon_start
    or unreflected.loaded_order_date >= bounds.horizon_start

{% endmacro %}
