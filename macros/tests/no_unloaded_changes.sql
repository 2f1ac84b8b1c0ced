{#- The silent miss: keys whose current source state changed at or before the model's current
    window start (stored watermark minus the domain's lookback) and yet is not reflected in the
    model. The next incremental run will not pick those up: they need a restatement (backfill).
    A key is missed when it is live in `expected_model` but absent from the model, deleted there
    but present in the model, or present with an older `updated_at`. Fails with their count. -#}
{% test no_unloaded_changes(model, expected_model, unique_key, domain) %}

{%- set watermark = get_watermark(model.identifier) %}
{%- set window_start = none if watermark is none
    else timestamp_literal(watermark - modules.datetime.timedelta(days=lookback_days(domain))) %}

with

expected as (
    select {{ unique_key }}, updated_at, is_deleted
    from {{ expected_model }}
    {%- if window_start %}
    where updated_at <= {{ window_start }}
    {%- endif %}
),

actual as (
    select {{ unique_key }}, updated_at
    from {{ model }}
)

select
    expected.{{ unique_key }},
    expected.updated_at as source_updated_at,
    actual.updated_at as loaded_updated_at,
    case
        when not expected.is_deleted and actual.{{ unique_key }} is null then 'missing'
        when expected.is_deleted and actual.{{ unique_key }} is not null then 'not deleted'
        else 'stale'
    end as problem
from expected
left join actual
    on expected.{{ unique_key }} = actual.{{ unique_key }}
where
    (not expected.is_deleted and actual.{{ unique_key }} is null)
    or (expected.is_deleted and actual.{{ unique_key }} is not null)
    or (not expected.is_deleted and actual.updated_at < expected.updated_at)

{% endtest %}
