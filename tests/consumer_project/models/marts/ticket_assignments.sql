{{ config(materialized='backfill_safe', unique_key='ticket_id', partition_by=['opened_date']) }}

-- One row per ticket with its assignee's current name and team: the team's SQL as it was before
-- the framework, joining its fact, its staging view and the agents' landed versions read
-- straight. Its scope and lookback: the yml.
with

tickets as (
    select ticket_id, opened_date, queue, amount from {{ ref('fct_ticket') }}
),

assignments as (
    select ticket_id, agent_id from {{ ref('stg_helpdesk__tickets') }}
),

agents as (
    select agent_id, agent_name, team
    from (
        select
            agent_id,
            agent_name,
            team,
            row_number() over (
                partition by agent_id order by updated_at desc, _loaded_at desc
            ) as version_rank
        from {{ source('helpdesk', 'agents') }}
    ) as ranked
    where version_rank = 1
)

select
    tickets.ticket_id,
    tickets.opened_date,
    tickets.queue,
    assignments.agent_id,
    agents.agent_name,
    agents.team,
    tickets.amount
from tickets
left join assignments on tickets.ticket_id = assignments.ticket_id
left join agents on assignments.agent_id = agents.agent_id
