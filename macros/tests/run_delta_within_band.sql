{#- Volume alert on what a daily run wrote: the latest successful daily run of the model
    (control.run_records, written by record_runs) against the mean of the `trailing_runs` runs
    before it. Its added records (Iceberg snapshot summaries) outside mean x (1 - band) ..
    mean x (1 + band) fail or warn (var volume_alert_severity). Quiet until `min_history_runs`
    runs with changes exist; a run that changed nothing is not a drop (no new data arrived). -#}
{% test run_delta_within_band(model, trailing_runs=10, band=0.8, min_history_runs=5) %}

with

runs as (
    select
        started_at,
        added_records,
        row_number() over (order by started_at desc) as run_rank
    from {{ var('control_schema', 'control') }}.run_records
    where
        model_name = '{{ backfill_safe.validated_identifier(model.identifier) }}'
        and status = 'success'
        and window_start is null
        and snapshots_committed > 0
),

latest as (
    select * from runs
    where run_rank = 1
),

history as (
    select
        avg(added_records) as trailing_mean,
        count(*) as trailing_runs
    from runs
    where run_rank between 2 and {{ (trailing_runs | int) + 1 }}
)

select
    latest.started_at,
    latest.added_records,
    history.trailing_mean,
    case when latest.added_records > history.trailing_mean then 'spike' else 'drop' end as alert
from latest
cross join history
where
    history.trailing_runs >= {{ min_history_runs | int }}
    and (
        latest.added_records < history.trailing_mean * (1 - {{ band }})
        or latest.added_records > history.trailing_mean * (1 + {{ band }})
    )

{% endtest %}
