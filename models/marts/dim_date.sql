{{ config(materialized='backfill_safe', unique_key='date_key') }}

-- One row per calendar day between vars date_spine_start and date_spine_end: a reference table
-- (the yml), so a run adds the days a var moved outward and compares nothing else row by row.
with

spine as (
    select explode(sequence(
        {{ date_var('date_spine_start') }},
        {{ date_var('date_spine_end', not_before='date_spine_start') }},
        interval 1 day
    )) as date_day
)

select
    cast(date_format(date_day, 'yyyyMMdd') as int) as date_key,
    date_day,
    year(date_day) as year_number,
    quarter(date_day) as quarter_number,
    month(date_day) as month_number,
    date_format(date_day, 'MMMM') as month_name,
    dayofweek(date_day) as day_of_week,
    date_format(date_day, 'EEEE') as day_name,
    dayofweek(date_day) in (1, 7) as is_weekend
from spine
