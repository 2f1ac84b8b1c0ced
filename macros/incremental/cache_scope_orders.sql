{#- The run's orders of a model scoped by orders (meta `scope_by_orders`), computed once: called
    by the model's select as it compiles, it creates a cached temporary view of this session
    (scope_orders_relation), and views of the raw versions of those orders and of their lines
    (scope_versions_relation, read by versions_in_scope), and returns the subquery of the orders
    (cached_scope_orders_subquery), which the model's select, merge_source's read of the table
    (scope_existing_rows) and the order dates (scope_order_dates) all take.
    - The changed orders (scope_order_ids) and their raw versions are shared by the models of
      one dbt invocation that compute the same ones (shared_scope_relations: the same domain,
      watermark and landing bound, so the same SQL): fct_order_item and fct_orders each read
      every raw file holding a version of one of the orders (order_id is not clustered), and
      the second model now reads the first's cache instead.
    - A daily run adds the orders of the table's rows for which `awaiting` is true (pointing to
      an unknown member) to the model's own scope; the raw versions of those not among the
      changed orders are read from raw and cached with the shared ones (none on most days).
    Without any cache, each reference to the scope inside the select and each pass of the MERGE
    evaluated the raw scans again (measured at 1M: 24 scans of raw.order_items in one MERGE).
    The cached views are hash-partitioned on order_id (`REPARTITION(order_id)`: a shuffle of the
    few rows found): a cache keeps its plan's partitions, and a scan of raw has one per split
    (92 at 1M lines, more as raw grows), so every stage reading the cache ran that many tasks
    of a few rows each; hashed on order_id, the select's windows and joins on the order's keys
    also find their input already clustered.
    Returns none, and creates nothing, when every order is in scope (full build, full refresh,
    no watermark yet) or while dbt parses. -#}
{% macro cache_scope_orders() %}
    {% if not execute or not is_incremental() %}
        {{ return(none) }}
    {% endif %}
    {% set settings = model_meta('scope_by_orders') %}
    {% if not settings %}
        {{ exceptions.raise_compiler_error(
            "model " ~ this ~ ": cache_scope_orders needs meta scope_by_orders: {domain, awaiting}") }}
    {% endif %}
    {% set changed = scope_order_ids(settings['domain']) %}
    {% if changed is none %}
        {{ return(none) }}
    {% endif %}
    {% set shared = cache_shared_scope(settings['domain'], changed) %}
    {% set awaiting = settings.get('awaiting') if backfill_window() is none else none %}
    {#- Statements, not run_query: DDL returns no rows, which run_query fails on through Thrift.
        A replaced view's cache is dropped; `cache table ... as select` would refuse a view that
        already exists. -#}
    {% set relation = scope_orders_relation() %}
    {% call statement('create_scope_orders_view', fetch_result=false) %}
        create or replace temporary view {{ relation }} as
        select /*+ REPARTITION(order_id) */ order_id from (
            select order_id from {{ shared.changed }}
            {%- if awaiting %}
            union
            select order_id from {{ this }} where {{ awaiting }}
            {%- endif %}
        ) as scoped
    {% endcall %}
    {% call statement('cache_scope_orders', fetch_result=false) %}
        cache table {{ relation }}
    {% endcall %}
    {% set not_shared %}
        select scoped.order_id from {{ relation }} as scoped
        left anti join {{ shared.changed }} as changed on scoped.order_id = changed.order_id
    {% endset %}
    {% set extra = awaiting
        and run_query("select count(*) from (" ~ not_shared ~ ")").rows[0][0] > 0 %}
    {#- each table's versions: the shared ones, plus, with extra orders, those of the keys only
        they reach (their orders; the customers only their versions name, for whether each
        arrived). Orders first: the customers' keys are read from the orders' view. -#}
    {% set extra_keys = {
        'orders': ('order_id', not_shared),
        'order_items': ('order_id', not_shared),
        'customers': ('customer_id', 'select customer_id from ' ~ scope_versions_relation('orders')
            ~ ' where customer_id not in (select customer_id from ' ~ shared.orders
            ~ ' where customer_id is not null)'),
    } %}
    {% for table in ['orders', 'order_items', 'customers'] %}
        {% set key, keys = extra_keys[table] %}
        {% call statement('create_scope_versions_view', fetch_result=false) %}
            create or replace temporary view {{ scope_versions_relation(table) }} as
            select * from {{ shared[table] }}
            {%- if extra %}
            union all
            select * from {{ source('shop', table) }} where {{ key }} in ({{ keys }})
            {%- endif %}
        {% endcall %}
        {% if extra %}
            {% call statement('cache_scope_versions', fetch_result=false) %}
                cache table {{ scope_versions_relation(table) }}
            {% endcall %}
        {% endif %}
    {% endfor %}
    {{ return(cached_scope_orders_subquery()) }}
{% endmacro %}

{#- The cached temporary views of the orders a run of `domain` finds changed (the SQL
    `changed`, from scope_order_ids), of their raw versions and of the raw versions of the
    customers those name, shared by the models of this
    dbt invocation that compute the same SQL (shared_scope_relations): made and cached by the
    first, found by the next (SHOW VIEWS lists this session's temporary views). Views left by
    an earlier invocation for the same domain are dropped (and so uncached) first, so a
    long-lived session keeps one invocation's caches, not every run's.
    Returns the relations, as shared_scope_relations. -#}
{% macro cache_shared_scope(domain, changed) %}
    {% set shared = shared_scope_relations(domain, changed) %}
    {% set found = [] %}
    {% for row in run_query("show views like 'scope_shared_*'").rows %}
        {% set name = row[1] | lower %}
        {% set temporary = (row[2] | string | lower) == 'true' %}
        {% if temporary and modules.re.fullmatch(shared.of_domain, name) %}
            {% do found.append(name) %}
        {% endif %}
    {% endfor %}
    {% if shared.changed in found and shared.orders in found and shared.order_items in found
        and shared.customers in found %}
        {{ return(shared) }}
    {% endif %}
    {% for name in found
        if modules.re.fullmatch(shared.of_domain, name).group(1) != shared.invocation %}
        {% call statement('drop_stale_shared_scope', fetch_result=false) %}
            drop view if exists {{ validated_identifier(name) }}
        {% endcall %}
    {% endfor %}
    {% call statement('create_shared_scope_view', fetch_result=false) %}
        create or replace temporary view {{ shared.changed }} as
        select /*+ REPARTITION(order_id) */ order_id from ({{ changed }}) as changed
    {% endcall %}
    {% call statement('cache_shared_scope', fetch_result=false) %}
        cache table {{ shared.changed }}
    {% endcall %}
    {#- the raw versions of those orders, read once: the select refers to the versions of the
        scope's orders and lines several times (staging, current state, the customers they
        name), and each reference was a scan of the whole raw table (order_id is not
        clustered: nothing to prune); and the versions of every customer those orders'
        versions name: both facts look up whether each arrived (fct_orders twice: for its
        orders and for its lines), and each lookup was a scan of every customer version
        (customer_id is not clustered either). Orders first: the customers are read from them. -#}
    {% set keys_of = {
        'orders': ('order_id', 'select order_id from ' ~ shared.changed),
        'order_items': ('order_id', 'select order_id from ' ~ shared.changed),
        'customers': ('customer_id', 'select customer_id from ' ~ shared.orders),
    } %}
    {% for table in ['orders', 'order_items', 'customers'] %}
        {% set key, keys = keys_of[table] %}
        {% call statement('create_shared_versions_view', fetch_result=false) %}
            create or replace temporary view {{ shared[table] }} as
            select /*+ REPARTITION({{ key }}) */ * from {{ source('shop', table) }}
            where {{ key }} in ({{ keys }})
        {% endcall %}
        {% call statement('cache_shared_versions', fetch_result=false) %}
            cache table {{ shared[table] }}
        {% endcall %}
    {% endfor %}
    {{ return(shared) }}
{% endmacro %}
