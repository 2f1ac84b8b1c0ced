{%- set awaiting = 'customer_key = ' ~ unknown_member_key()
    ~ ' or product_key = ' ~ unknown_member_key() %}
{{
    config(
        unique_key='order_item_sk',
        partition_by=['order_date'],
        meta={
            'backfill_safe': {
                'event_date': 'order_date',
                'lookback': 'sales',
                'current_state': 'int_order_items__current_state',
                'measures': ['quantity', 'net_amount'],
                'scope': {
                    'key': 'order_id',
                    'event_time': 'shop.orders.ordered_at',
                    'changes': [
                        'shop.orders',
                        'shop.order_items',
                        {'source': 'shop.products', 'through': 'shop.order_items',
                         'on': 'product_id', 'effective_dated': true},
                    ],
                    'lookups': [
                        {'source': 'shop.customers', 'on': 'customer_id', 'named_by': 'shop.orders'},
                    ],
                    'awaiting': awaiting,
                },
            },
            'watermark_exclude': ['shop.customers'],
        },
    )
}}

-- watermark_exclude: customers are read only to tell whether a line's customer arrived;
-- their update times are not this fact's change times, so they do not move its watermark.

-- One row per current, non-deleted order line whose order is current and non-deleted.
-- A run's scope is every line whose current state changed after the lower bound (the stored
-- watermark minus the sales lookback): a changed line, a changed order header (restates all
-- its lines), or a new product version now in effect (restates their cost); and every line
-- still pointing to an unknown customer or product, until it arrives (re-keyed then).
{%- set scope = incremental_scope('sales', 'order_date', 'order_item_sk', awaiting=awaiting) %}
-- The current state is computed for the orders the run's changes reach only (scope_keys,
-- computed once into a cached view by cache_scope_keys as this select compiles): their
-- versions are ranked and joined, not the whole history's, then narrowed to the scope.
-- depends_on: {{ ref('int_order_items__current_state') }}

{%- set scoped_orders = cache_scope_keys() %}

with

current_state as (
    select * from (
        {{ order_items_current_state(scoped_orders) }}
    ) as line_state
    {% if scope %}
        where {{ scope }}
    {% endif %}
),

-- the rows of a full build; an incremental run sends current_state to merge_source instead
live as (  -- noqa: ST03
    select
        order_item_sk,
        order_id,
        order_item_id,
        order_date,
        order_date_key,
        customer_key,
        product_key,
        channel_key,
        quantity,
        gross_amount,
        discount_amount,
        net_amount,
        cost_amount,
        updated_at
    from current_state
    where not is_deleted
)

{{ merge_source(
    'live', changes='current_state', unique_key='order_item_sk',
    existing=scope_existing_rows(scoped_orders)
) }}
