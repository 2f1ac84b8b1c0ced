{#- Volume alert on a fact's rows per event date: each of the last `recent_days` dates (ending
    at the latest date in the model) is compared with the median of the `trailing_days` dates
    before it (a median, so a few sparse early dates or one odd day do not move the bar; the
    column keeps the name trailing_mean); a date outside median x (1 - band) .. median x
    (1 + band) fails (or warns: the
    test's severity, var volume_alert_severity). Dates with no rows count as 0 (a calendar
    spine, so a missing day is a drop). Quiet until `min_history_days` dates of history exist
    and while the trailing median is below `min_trailing_mean` rows a day (too little to judge). -#}
{% test volume_within_band(model, date_column, trailing_days=14, band=0.5, min_history_days=7,
                           recent_days=1, min_trailing_mean=10) %}

with

bounds as (
    select
        min({{ date_column }}) as first_day,
        max({{ date_column }}) as last_day
    from {{ model }}
),

calendar as (
    select explode(sequence(first_day, last_day, interval 1 day)) as day
    from bounds
),

daily as (
    select
        {{ date_column }} as day,
        count(*) as row_count
    from {{ model }}
    group by {{ date_column }}
),

series as (
    select
        calendar.day,
        coalesce(daily.row_count, 0) as row_count
    from calendar
    left join daily
        on calendar.day = daily.day
),

with_history as (
    select
        day,
        row_count,
        percentile(row_count, 0.5) over (
            order by day rows between {{ trailing_days | int }} preceding and 1 preceding
        ) as trailing_mean,
        count(*) over (
            order by day rows between {{ trailing_days | int }} preceding and 1 preceding
        ) as trailing_days
    from series
)

select
    with_history.day,
    with_history.row_count,
    with_history.trailing_mean,
    case
        when with_history.row_count > with_history.trailing_mean then 'spike' else 'drop'
    end as alert
from with_history
cross join bounds
where
    with_history.day > date_sub(bounds.last_day, {{ recent_days | int }})
    and with_history.trailing_days >= {{ min_history_days | int }}
    and with_history.trailing_mean >= {{ min_trailing_mean }}
    and (
        with_history.row_count < with_history.trailing_mean * (1 - {{ band }})
        or with_history.row_count > with_history.trailing_mean * (1 + {{ band }})
    )

{% endtest %}
