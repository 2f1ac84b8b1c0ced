{#- The run's keys of a model with a declared scope (run_plan.scope), computed once: called by
    the model's select as it compiles, it finds or makes the cached temporary views of this
    session that hold them (scope_keys_relation) and the landed versions of those keys in each
    direct source and of the members they name in each lookup (scope_versions_relation, read by
    versions_in_scope): the invocation's shared views, or the model's own (below), and returns
    the subquery of the keys (scope_keys_cache_subquery),
    which the model's select, rows_to_merge's read of the table (scope_existing_rows) and the
    event dates (scope_event_dates) all take.
    - The changed keys (scope_keys_select) and their versions are shared by the models of one dbt
      invocation that compute the same ones (scope_shared_relations: the same domain,
      watermark, landing bound and declaration, so the same SQL): in the shop, fct_order_item
      and fct_orders each read every raw file holding a version of one of the orders (the key
      is not clustered), and the second model now reads the first's cache instead.
    - A model whose keys are the shared ones (every backfill; a daily run whose table has no
      awaiting row outside them: most days) reads the shared views themselves
      (invocation_store('scope_relations'), which scope_keys_relation and
      scope_versions_relation answer from) and caches nothing of its own.
    - A daily run adds the keys of the table's rows for which the scope's `awaiting` is true
      (pointing to an unknown member) to the model's own scope; then the model caches its own
      keys, and its versions: the shared ones and those only the added keys reach, read from
      the sources.
    Without any cache, each reference to the scope inside the select and each pass of the MERGE
    evaluated the source scans again. The cached views are hash-partitioned on their key (`REPARTITION(key)`: a
    shuffle of the few rows found): a cache keeps its plan's partitions, and a scan of raw has
    one per split (more as raw grows), so every stage reading the cache ran
    that many tasks of a few rows each; hashed on the key, the select's windows and joins on it
    also find their input already clustered.
    Returns none, and creates nothing, when every key is in scope (full build, full refresh, no
    watermark yet), while dbt parses, and when the model's inputs landed nothing since its last
    run (nothing_landed_since_last_run): its select is then never run (idle_merge_statement),
    and its compilation caches nothing (figures: docs/benchmarks/history.md). -#}
{% macro scope_keys_cached() %}
    {% if not execute or not backfill_safe.run_plan().incremental
        or backfill_safe.nothing_landed_since_last_run() %}
        {{ return(none) }}
    {% endif %}
    {#- once per model and invocation: a select that inlines its staging restricted to the
        keys (scope_keys) asks as it compiles, and the materialization asks again -#}
    {% set made = backfill_safe.invocation_store('scope_keys_select') %}
    {% if this.identifier not in made %}
        {% do made.update({this.identifier: backfill_safe.scope_keys_cache()}) %}
    {% endif %}
    {{ return(made[this.identifier]) }}
{% endmacro %}

{#- What scope_keys_cached does, once per model and invocation. -#}
{% macro scope_keys_cache() %}
    {% set scope = backfill_safe.run_plan().scope %}
    {% if scope is none %}
        {{ exceptions.raise_compiler_error(
            "model " ~ this ~ ": scope_keys_cached needs config.meta.backfill_safe.scope") }}
    {% endif %}
    {% if scope.models %}
        {{ return(backfill_safe.model_scope_keys_cache(scope)) }}
    {% endif %}
    {% set changed = backfill_safe.scope_keys_select() %}
    {% if changed is none %}
        {{ return(none) }}
    {% endif %}
    {% set key = scope.key %}
    {% set shared = backfill_safe.scope_shared_cache(scope, changed) %}
    {% set awaiting = scope.awaiting if backfill_safe.run_plan().window is none else none %}
    {#- one statement for two counts: the keys only the table's awaiting rows bring, and the
        awaiting rows themselves (none on most days: scope_predicate then leaves out its read of
        the table for them) -#}
    {% set waiting %}
        select waiting.{{ key }} from (select {{ key }} from {{ this }} where {{ awaiting }}) as waiting
        left anti join {{ shared.changed }} as changed on waiting.{{ key }} = changed.{{ key }}
    {% endset %}
    {% set counts = run_query("select (select count(*) from (" ~ waiting ~ ")), (select "
        ~ "count(*) from " ~ this ~ " where " ~ awaiting ~ ")").rows[0] if awaiting else [0, 0] %}
    {% do backfill_safe.invocation_store('awaiting_rows').update({this.identifier: counts[1]}) %}
    {% if counts[0] == 0 %}
        {#- the run's keys are the shared ones (most days, every backfill): the model reads the
            shared views themselves, and caches nothing of its own -#}
        {% do backfill_safe.invocation_store('scope_relations').update({this.identifier: {
            'keys': shared.changed, 'versions': shared.versions}}) %}
        {{ return(backfill_safe.scope_keys_cache_subquery()) }}
    {% endif %}
    {#- keys only the awaiting rows bring: the model's own views, the shared keys and versions
        plus those only they reach (their keys' versions; the members only their versions name).
        Direct sources first: the lookups' members are read from their views. -#}
    {% set relation = backfill_safe.cache_scope_keys(
        'select ' ~ key ~ ' from ' ~ shared.changed, key, awaiting) %}
    {% set not_shared %}
        select scoped.{{ key }} from {{ relation }} as scoped
        left anti join {{ shared.changed }} as changed on scoped.{{ key }} = changed.{{ key }}
    {% endset %}
    {% for table in scope.direct + scope.lookups %}
        {% if table in scope.direct %}
            {% set column, keys = backfill_safe.scope_key_column(scope, table), not_shared %}
        {% else %}
            {% set column = table.on %}
            {% set keys = 'select ' ~ column ~ ' from ' ~ backfill_safe.scope_versions_relation(
                table.named_by.source_name, table.named_by.table) ~ ' where ' ~ column
                ~ ' not in (select ' ~ column ~ ' from ' ~ shared.versions[table.named_by.source_name
                ~ '.' ~ table.named_by.table] ~ ' where ' ~ column ~ ' is not null)' %}
        {% endif %}
        {% call statement('create_scope_versions_view', fetch_result=false) %}
            create or replace temporary view {{ backfill_safe.scope_versions_relation(table.source_name, table.table) }} as
            select * from {{ shared.versions[table.name] }}
            union all
            select * from {{ source(table.source_name, table.table) }} where {{ column }} in ({{ keys }})
        {% endcall %}
        {% call statement('cache_scope_versions', fetch_result=false) %}
            cache table {{ backfill_safe.scope_versions_relation(table.source_name, table.table) }}
        {% endcall %}
    {% endfor %}
    {{ return(backfill_safe.scope_keys_cache_subquery()) }}
{% endmacro %}

{#- scope_keys_cache for a scope whose changes are models of the kind: the keys their runs
    changed (model_scope_keys_select), on a daily run those its landed sources' changes reach
    when it names some beside them (scope_keys_select; a backfill adds the window's keys in
    rows_over_models), and those of the table's rows awaiting a member, in one cached temporary
    view; none when every key is in scope. -#}
{% macro model_scope_keys_cache(scope) %}
    {% set changed = backfill_safe.model_scope_keys_select(scope) %}
    {% if changed is none %}
        {{ return(none) }}
    {% endif %}
    {% set daily = backfill_safe.run_plan().window is none %}
    {% if daily and (scope.direct or scope.through) %}
        {% set landed = backfill_safe.scope_keys_select() %}
        {% if landed is none %}
            {{ return(none) }}
        {% endif %}
        {% set changed = changed ~ "\nunion\n" ~ landed %}
    {% endif %}
    {% do backfill_safe.cache_scope_keys(changed, scope.key,
        scope.awaiting if daily else none) %}
    {{ return(backfill_safe.scope_keys_cache_subquery()) }}
{% endmacro %}

{#- The model's scope keys as one cached temporary view (scope_keys_relation, returned): the
    keys of `keys_select`, and, with `awaiting` (a predicate on the table's rows), those of the
    table's rows awaiting a member; hash-partitioned on the key (scope_keys_cached says why).
    Statements, not run_query: DDL returns no rows, which run_query fails on through Thrift.
    A replaced view's cache is dropped; `cache table ... as select` would refuse a view that
    already exists. -#}
{% macro cache_scope_keys(keys_select, key, awaiting=none) %}
    {% set relation = backfill_safe.scope_keys_relation() %}
    {% call statement('create_scope_keys_view', fetch_result=false) %}
        create or replace temporary view {{ relation }} as
        select /*+ REPARTITION({{ key }}) */ {{ key }} from (
            {{ keys_select }}
            {%- if awaiting %}
            union
            select {{ key }} from {{ this }} where {{ awaiting }}
            {%- endif %}
        ) as scoped
    {% endcall %}
    {% call statement('scope_keys_cached', fetch_result=false) %}
        cache table {{ relation }}
    {% endcall %}
    {{ return(relation) }}
{% endmacro %}

{#- The cached temporary views of the keys a run of a declared scope finds changed (the SQL
    `changed`, from scope_keys_select), of their versions in each direct source and of the versions of
    the members those name in each lookup, shared by the models of this dbt invocation that
    compute the same SQL (scope_shared_relations): made and cached by the first, found by the
    next (SHOW VIEWS lists this session's temporary views). Views left by an earlier invocation
    for the same domain are dropped (and so uncached) first, so a long-lived session keeps one
    invocation's caches, not every run's. Returns the relations, as scope_shared_relations. -#}
{% macro scope_shared_cache(scope, changed) %}
    {% set shared = backfill_safe.scope_shared_relations(scope, changed) %}
    {% set found = [] %}
    {% for row in run_query("show views like 'scope_shared_*'").rows %}
        {% set name = row[1] | lower %}
        {% set temporary = (row[2] | string | lower) == 'true' %}
        {% if temporary and modules.re.fullmatch(shared.of_domain, name) %}
            {% do found.append(name) %}
        {% endif %}
    {% endfor %}
    {% set wanted = [shared.changed] + shared.versions.values() | list %}
    {% if wanted | reject('in', found) | list | length == 0 %}
        {{ return(shared) }}
    {% endif %}
    {% for name in found
        if modules.re.fullmatch(shared.of_domain, name).group(1) != shared.invocation %}
        {% call statement('drop_stale_shared_scope', fetch_result=false) %}
            drop view if exists {{ backfill_safe.validated_identifier(name) }}
        {% endcall %}
    {% endfor %}
    {% set key = scope.key %}
    {#- only those not found are made (shared_scope_view) -#}
    {% if shared.changed not in found %}
        {% do backfill_safe.shared_scope_view(shared.changed,
            'select /*+ REPARTITION(' ~ key ~ ') */ ' ~ key ~ ' from (' ~ changed ~ ') as changed') %}
    {% endif %}
    {#- the versions of those keys, read once: the select refers to the versions of the scope's
        keys several times (staging, current state, the members they name), and each reference
        was a scan of the whole landed table (the key is not clustered: nothing to prune); and
        the versions of every member those versions name: in the shop both facts look up
        whether each customer arrived (fct_orders twice: for its orders and for its lines), and
        each lookup was a scan of every customer version. Direct sources first: the members are
        read from their views. -#}
    {% for table in scope.direct + scope.lookups if shared.versions[table.name] not in found %}
        {% if table in scope.direct %}
            {% set column = backfill_safe.scope_key_column(scope, table) %}
            {% set keys = 'select ' ~ key ~ ' from ' ~ shared.changed %}
        {% else %}
            {% set column = table.on %}
            {% set keys = 'select ' ~ column ~ ' from '
                ~ shared.versions[table.named_by.source_name ~ '.' ~ table.named_by.table] %}
        {% endif %}
        {% do backfill_safe.shared_scope_view(shared.versions[table.name],
            'select /*+ REPARTITION(' ~ column ~ ') */ * from '
            ~ source(table.source_name, table.table) ~ ' where ' ~ column ~ ' in (' ~ keys ~ ')') %}
    {% endfor %}
    {{ return(shared) }}
{% endmacro %}

{#- One cached temporary view `name` of `select`, shared by the models of this invocation
    (scope_shared_cache). One statement, `cache table ... as select`, when the invocation runs
    one thread: the name is the invocation's and was not found, so nothing else makes it. With
    more threads, two models of the scope may make it at once in the one session of the
    embedded engine, and `cache table ... as select` refuses a view that exists: a view made or
    replaced, then cached (two statements, both safe to repeat). -#}
{% macro shared_scope_view(name, select) %}
    {% if (target.get('threads') or 1) | int == 1 %}
        {% call statement('scope_shared_cache', fetch_result=false) %}
            cache table {{ name }} as {{ select }}
        {% endcall %}
    {% else %}
        {% call statement('create_shared_scope_view', fetch_result=false) %}
            create or replace temporary view {{ name }} as {{ select }}
        {% endcall %}
        {% call statement('scope_shared_cache', fetch_result=false) %}
            cache table {{ name }}
        {% endcall %}
    {% endif %}
{% endmacro %}

{#- The subquery of the keys in this run's scope (scope_keys_cached: computed once per model and
    invocation, cached), or none when every key is in scope (a full build, a full refresh, no
    watermark yet). A call a model's select may make (docs/reference/configuration.md): a model whose current
    state is cheaper computed for its keys than filtered after (the shop's facts rank and join
    the versions of a run's orders only) passes it to the macro that stages its sources. -#}
{% macro scope_keys() %}
    {{ return(backfill_safe.scope_keys_cached()) }}
{% endmacro %}
