{#- The orders a sales fact's run must recompute, as a SQL subquery of order_id over the raw
    tables (every version, quarantined ones too: a superset is harmless, since each order in it
    is recomputed from all its versions and merge_source sends only rows that differ), or none
    when every order is in scope (full build, full refresh, no watermark yet). The facts inline
    their current state restricted to these orders (order_items_current_state,
    orders_current_state), so a daily run ranks and joins the versions of the orders its changes
    reach instead of the whole history; incremental_scope then picks the rows as before. Each
    branch filters a raw table on its own columns (Iceberg prunes files by their bounds).
    - Daily: the orders with a line version or an order version among the run's changes
      (changed_versions_predicate: updated after the lower bound, landed after the last
      committed run started), the orders placed at or after such a product version and
      holding a line of that product (the new cost is in effect for them; all the
      product's orders when the version is its earliest). cache_scope_orders adds the orders
      of the table's rows still awaiting a member.
    - Backfill: the orders with a version dated in the window, and those the table holds in it.
    A row of incremental_scope's daily scope has updated_at = the greatest of its line's,
    order's and product version's update times, all versions of these raw tables: its order is
    here. -#}
{% macro scope_order_ids(domain) %}
    {% if not is_incremental() %}
        {{ return(none) }}
    {% endif %}
    {% set orders = source('shop', 'orders') %}
    {% set order_items = source('shop', 'order_items') %}
    {% set window = backfill_window() %}
    {% if window is not none %}
        {% set in_window %}
            select order_id from {{ orders }}
            where
                cast(ordered_at as date) >= date'{{ window.start }}'
                and cast(ordered_at as date) < date'{{ window.end }}'
            union
            select order_id from {{ this }}
            where order_date >= date'{{ window.start }}' and order_date < date'{{ window.end }}'
        {% endset %}
        {{ return(in_window) }}
    {% endif %}
    {% set changed_versions = changed_versions_predicate(domain) %}
    {% if changed_versions is none %}
        {{ return(none) }}
    {% endif %}
    {#- The product branch: a product version updated after the lower bound, effective from its
        updated_at T, is in effect only for the lines of orders placed at or after T (the
        latest version effective at ordered_at), or, when it is the product's earliest version,
        for its lines ordered before any version too. So its orders are those of the product's
        lines with a version of the order placed at or after T (every version's ordered_at: a
        superset), plus every line of a product whose earliest version changed. Before, every
        order that ever had a line of the product was in scope: at 5M lines, 27 cost changes in
        the lookback put 93k orders (430k line versions) in a daily run's scope, to restate the
        few placed after them. It reads the product_id of every version of every line (order_id
        is not clustered, nothing to prune), so it is left out when no product version was
        updated after the lower bound; the order headers are read from the earliest such T on
        (a literal: Iceberg prunes raw.orders' files by their ordered_at bounds). -#}
    {% set products = source('shop', 'products') %}
    {% set first_change = memoized_rows(
        "select date_format(min(updated_at), 'yyyy-MM-dd HH:mm:ss.SSSSSS') from " ~ products
        ~ " where " ~ changed_versions)[0][0] %}
    {% if first_change is not none and not modules.re.fullmatch(
            '[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}', first_change | string) %}
        {{ exceptions.raise_compiler_error(
            "model " ~ this ~ ": shop.products.updated_at gave a time " ~ first_change) }}
    {% endif %}
    {% set changed_products %}
        select changed.product_id, min(changed.updated_at) as effective_from
        from {{ products }} as changed
        where {{ changed_versions }}
        group by changed.product_id
    {% endset %}
    {% set earliest_changed %}
        select changed.product_id
        from {{ products }} as changed
        where
            ({{ changed_versions }})
            and not exists (
                select 1 from {{ products }} as earlier
                where earlier.product_id = changed.product_id and earlier.updated_at < changed.updated_at
            )
    {% endset %}
    {% set changed %}
        select order_id from {{ order_items }} where {{ changed_versions }}
        union
        select order_id from {{ orders }} where {{ changed_versions }}
        {%- if first_change is not none %}
        union
        select lines.order_id
        from {{ order_items }} as lines
        inner join ({{ changed_products }}) as changed
            on lines.product_id = changed.product_id
        inner join (
            select order_id, ordered_at from {{ orders }}
            where ordered_at >= timestamp'{{ first_change }}'
        ) as headers
            on lines.order_id = headers.order_id
        where headers.ordered_at >= changed.effective_from
        union
        select order_id from {{ order_items }}
        where product_id in ({{ earliest_changed }})
        {%- endif %}
    {% endset %}
    {{ return(changed) }}
{% endmacro %}
