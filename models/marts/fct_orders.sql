{%- set awaiting = 'customer_key = ' ~ unknown_member_key() ~ ' or awaits_product' %}
{{
    config(
        unique_key='order_id',
        partition_by=['order_date'],
        meta={
            'backfill_safe': {
                'event_date': 'order_date',
                'lookback': 'sales',
                'current_state': 'int_orders__current_state',
                'measures': ['total_quantity', 'net_amount'],
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

-- watermark_exclude: customers are read only to tell whether an order's customer arrived;
-- their update times are not this fact's change times, so they do not move its watermark.

-- One row per current, non-deleted order with totals from its current lines. A run's scope is
-- every order whose header or any of whose lines changed after the lower bound, and every
-- order still pointing to an unknown customer or with a line whose product has not arrived
-- (its cost incomplete), until it arrives.
{%- set scope = incremental_scope('sales', 'order_date', 'order_id', awaiting=awaiting) %}
-- The current state is computed for the orders the run's changes reach only (scope_keys,
-- computed once into a cached view by cache_scope_keys as this select compiles),
-- then narrowed to the scope.
-- depends_on: {{ ref('int_orders__current_state') }}

{%- set scoped_orders = cache_scope_keys() %}

with

current_state as (
    select * from (
        {{ orders_current_state(scoped_orders) }}
    ) as order_state
    {% if scope %}
        where {{ scope }}
    {% endif %}
),

-- the rows of a full build; an incremental run sends current_state to merge_source instead
live as (  -- noqa: ST03
    select
        order_id,
        order_date,
        order_date_key,
        customer_key,
        channel_key,
        status,
        item_count,
        total_quantity,
        gross_amount,
        discount_amount,
        net_amount,
        cost_amount,
        ordered_at,
        awaits_product,
        updated_at
    from current_state
    where not is_deleted
)

{{ merge_source(
    'live', changes='current_state', unique_key='order_id',
    existing=scope_existing_rows(scoped_orders)
) }}
