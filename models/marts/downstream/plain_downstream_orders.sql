{{ config(materialized='table', file_format='iceberg') }}

-- A plain dbt table downstream of a fact of the framework's kind (var downstream_models): it
-- holds what it read when it was last built, so a backfill of the fact leaves it stale until it
-- is built again (the runner names it after a publish, or rebuilds it: --rebuild-downstream).
select
    order_id,
    order_date,
    net_amount
from {{ ref('fct_orders') }}
