{{ config(materialized='table', file_format='parquet') }}

-- The days tickets were opened on: a plain Parquet table, built again by every run, and named
-- like the framework's example dim_date (whose tests, on a date_key, must not reach this project).
select
    opened_date as date_day,
    dayofweek(opened_date) in (1, 7) as is_weekend,
    count(*) as tickets_opened
from {{ ref('fct_ticket') }}
group by opened_date
