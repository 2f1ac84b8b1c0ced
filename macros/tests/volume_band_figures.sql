{#- The figures volume_within_band judges, one row per recent date of a model (the last
    `recent_days` dates, ending at the latest date it holds): `day`, its `row_count`, the median
    of the `trailing_days` dates before it (`trailing_mean`, a median, so a few sparse early dates
    or one odd day do not move the bar) and how many dates that median is over
    (`trailing_days`). Dates with no rows count as 0 (a calendar spine, so a missing day is a
    drop). The one home of these figures: the test reads them, and so does `pipeline status`
    through `dbt show` (pipeline.volume: a test that cannot fire at its table's volume).
    `model`: the relation, or its name as schema.table. -#}
{% macro volume_band_figures(model, date_column, trailing_days=14, recent_days=1) %}
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
    with_history.trailing_days
from with_history
cross join bounds
where with_history.day > date_sub(bounds.last_day, {{ recent_days | int }})
{% endmacro %}
