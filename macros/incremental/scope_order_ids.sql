{#- The orders a sales fact's run must recompute, as a SQL subquery of order_id over the raw
    tables (every version, quarantined ones too: a superset is harmless, since each order in it
    is recomputed from all its versions and merge_source sends only rows that differ), or none
    when every order is in scope (full build, full refresh, no watermark yet). The facts inline
    their current state restricted to these orders (order_items_current_state,
    orders_current_state), so a daily run ranks and joins the versions of the orders its changes
    reach instead of the whole history; incremental_scope then picks the rows as before. Each
    branch filters a raw table on its own columns (Iceberg prunes files by their bounds).
    - Daily: the orders with a line version or an order version updated after the lower bound
      (incremental_lower_bound), the orders with a line of a product that has a version updated
      after it (a new cost may be in effect for them), and the orders of the table's rows for
      which `awaiting` is true (pointing to an unknown member).
    - Backfill: the orders with a version dated in the window, and those the table holds in it.
    A row of incremental_scope's daily scope has updated_at = the greatest of its line's,
    order's and product version's update times, all versions of these raw tables: its order is
    here. -#}
{% macro scope_order_ids(domain, awaiting=none) %}
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
    {% set lower_bound = incremental_lower_bound(domain) %}
    {% if lower_bound is none %}
        {{ return(none) }}
    {% endif %}
    {#- The product branch reads the product_id of every version of every line (order_id is
        not clustered, nothing to prune), so it is left out when no product version was updated
        after the lower bound (the usual day: the products are few and read in one pruned scan;
        at 1M lines the branch read 1.78M rows to find none). -#}
    {% set changed_products %}
        select product_id from {{ source('shop', 'products') }} where updated_at > {{ lower_bound }}
    {% endset %}
    {% set product_changed = run_query(changed_products ~ " limit 1").rows | length > 0 %}
    {% set changed %}
        select order_id from {{ order_items }} where updated_at > {{ lower_bound }}
        union
        select order_id from {{ orders }} where updated_at > {{ lower_bound }}
        {%- if product_changed %}
        union
        select order_id from {{ order_items }}
        where product_id in ({{ changed_products }})
        {%- endif %}
        {%- if awaiting %}
        union
        select order_id from {{ this }} where {{ awaiting }}
        {%- endif %}
    {% endset %}
    {{ return(changed) }}
{% endmacro %}
