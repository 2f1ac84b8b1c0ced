{{
    config(
        unique_key='ticket_id',
        partition_by=['opened_date'],
        meta={
            'backfill_safe': {
                'event_date': 'opened_date',
                'lookback': 1,
                'current_state': 'stg_helpdesk__tickets',
                'measures': ['amount'],
                'scope': {
                    'key': 'ticket_id',
                    'event_time': 'helpdesk.tickets.opened_at',
                    'changes': ['helpdesk.tickets'],
                },
            },
        },
    )
}}

-- One row per current, non-deleted ticket.
{%- set scope = backfill_safe.incremental_scope(1, 'opened_date', 'ticket_id') %}
{%- set scoped_tickets = backfill_safe.cache_scope_keys() %}

with

current_state as (
    select * from {{ ref('stg_helpdesk__tickets') }}
    {% if scoped_tickets %}
        where ticket_id in ({{ scoped_tickets }}) and ({{ scope }})
    {% elif scope %}
        where {{ scope }}
    {% endif %}
),

live as (
    select
        ticket_id,
        opened_date,
        queue,
        amount,
        updated_at
    from current_state
    where not is_deleted
)

{{ backfill_safe.merge_source(
    'live', changes='current_state', unique_key='ticket_id',
    existing=backfill_safe.scope_existing_rows(scoped_tickets)
) }}
