{#- The current state of every order line as the fact should show it, computed from the staged
    current versions with no incremental logic: one row per (order_id, order_item_id) ever seen,
    `is_deleted` when the line, its order, or the order's arrival says it must not be in the
    fact. int_order_items__current_state is this macro for every order; fct_order_item inlines
    it for the orders of a run's scope only (`order_ids`, a SQL subquery of order_id): the
    lines of those orders, their orders and the customers any version of them names. Each key
    in scope reads all its versions, so its row is the one the unrestricted state holds.
    Product versions are not restricted: the catalog's versions are few next to the order
    lines, and restricting them to the products of the lines in scope cost a second scan of
    every version of every order line (measured at 1M lines: 1.78M rows read to narrow 5k
    product versions); the join to the lines keeps only theirs. -#}
{% macro order_items_current_state(order_ids=none) %}
{%- set customer_ids = customers_of_orders(order_ids) %}
    with

    line_versions as (
        {{ staged_order_items(order_ids) }}
    ),

    order_headers as (
        {{ staged_orders(order_ids) }}
    ),

    line_product_versions as (
        {{ staged_product_versions() }}
    ),

    -- customers that arrived (deleted ones included: the dimension keeps them)
    line_customers as (
        select customer_id from ({{ staged_customers(customer_ids) }}) as current_customers
    ),

    -- each line with its order (read once), and every version of its product
    lines as (
        select
            line_versions.order_id,
            line_versions.order_item_id,
            line_versions.product_id,
            line_versions.quantity,
            line_versions.unit_price,
            line_versions.discount_amount,
            line_versions.updated_at,
            line_versions.is_deleted,
            order_headers.order_id is not null as order_arrived,
            order_headers.order_date,
            order_headers.customer_id,
            order_headers.channel,
            order_headers.ordered_at,
            order_headers.updated_at as order_updated_at,
            order_headers.is_deleted as order_is_deleted,
            line_customers.customer_id is not null as customer_arrived
        from line_versions
        left join order_headers
            on line_versions.order_id = order_headers.order_id
        left join line_customers
            on order_headers.customer_id = line_customers.customer_id
    ),

    -- the product version in effect when the order was placed: the latest version effective at
    -- ordered_at, else (ordered before the product's first version) the earliest one; none for a
    -- line whose order has not arrived or whose product has no version
    product_candidates as (
        select
            lines.*,
            line_product_versions.updated_at as product_valid_from,
            line_product_versions.unit_cost,
            row_number() over (
                partition by lines.order_id, lines.order_item_id
                order by {{ version_in_effect_order(
                    'line_product_versions.updated_at', 'lines.ordered_at'
                ) }}
            ) as candidate_rank
        from lines
        left join line_product_versions
            on
                lines.product_id = line_product_versions.product_id
                and lines.order_arrived
    ),

    line_in_effect as (
        select * from product_candidates
        where candidate_rank = 1
    ),

    line_state as (
        select
            {{ surrogate_key(['order_id', 'order_item_id']) }} as order_item_sk,
            order_id,
            order_item_id,
            order_date,
            cast(date_format(order_date, 'yyyyMMdd') as int) as order_date_key,
            -- a customer or product that has not arrived: the dimensions' unknown member
            case
                when customer_arrived then {{ surrogate_key(['customer_id']) }}
                else {{ unknown_member_key() }}
            end as customer_key,
            case
                when product_valid_from is not null
                    then {{ surrogate_key(['product_id', 'product_valid_from']) }}
                else {{ unknown_member_key() }}
            end as product_key,
            {{ surrogate_key(['channel']) }} as channel_key,
            quantity,
            cast(quantity * unit_price as decimal(18, 2)) as gross_amount,
            cast(discount_amount as decimal(18, 2)) as discount_amount,
            cast(quantity * unit_price - discount_amount as decimal(18, 2)) as net_amount,
            cast(quantity * unit_cost as decimal(18, 2)) as cost_amount,
            -- the latest change of any version this row reflects
            greatest(updated_at, order_updated_at, product_valid_from) as updated_at,
            (
                is_deleted
                or coalesce(order_is_deleted, false)
                or not order_arrived
            ) as is_deleted
        from line_in_effect
    )

    select * from line_state
{% endmacro %}
