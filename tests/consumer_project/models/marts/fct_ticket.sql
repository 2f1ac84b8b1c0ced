{{ config(materialized='backfill_safe', unique_key='ticket_id', partition_by=['opened_date']) }}

-- One row per ticket as it should be now, deleted tickets flagged is_deleted. Its scope and
-- lookback: the yml.
select
    ticket_id,
    opened_date,
    queue,
    amount,
    updated_at,
    is_deleted
from {{ ref('stg_helpdesk__tickets') }}
