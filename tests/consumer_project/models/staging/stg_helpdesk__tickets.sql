with

current_version as (
    {{ backfill_safe.staged_versions('helpdesk', 'tickets', ['id']) }}
)

select
    id as ticket_id,
    cast(opened_at as date) as opened_date,
    lower(queue) as queue,
    agent_id,
    amount,
    updated_at,
    coalesce(is_deleted, false) as is_deleted
from current_version
