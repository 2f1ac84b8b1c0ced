{#- The keys a run of a model with a declared scope (run_plan.scope) must recompute, as a SQL
    subquery of its scope key over its landed sources (every version, quarantined ones too: a
    superset is harmless, since each key in it is recomputed from all its versions and
    rows_to_merge sends only rows that differ), or none when every key is in scope (full build,
    full refresh, no watermark yet). The model inlines its current state restricted to these
    keys, so a daily run ranks and joins the versions of the keys its changes reach instead of
    the whole history; scope_predicate then picks the rows as before. Each branch filters a
    landed table on its own columns (Iceberg prunes files by their bounds).
    - Daily: the keys with a version of a direct source among the run's changes
      (changed_versions_predicate: updated after the lower bound, landed after the last
      committed run started); for a source reached through a direct one (`through`, `on`), the
      keys of the direct source's versions naming a changed `on`; for an effective-dated one,
      only the keys whose event time is at or after the changed version's update time, plus
      every key naming an `on` whose earliest version changed (it is in effect before any
      other). scope_keys_cached adds the keys of the table's rows still awaiting a member.
    - Backfill: the keys with a version whose event time is in the window, and those the
      table holds in it.
    A row of scope_predicate's daily scope has updated_at = the greatest of its inputs'
    update times, each a version of a declared change: its key is here. -#}
{% macro scope_keys_select() %}
    {% set plan = backfill_safe.run_plan() %}
    {% if not plan.incremental %}
        {{ return(none) }}
    {% endif %}
    {% set scope = plan.scope %}
    {% if scope is none %}
        {{ exceptions.raise_compiler_error(
            "model " ~ this ~ ": scope_keys_select needs config.meta.backfill_safe.scope") }}
    {% endif %}
    {% set key = scope.key %}
    {% set window = plan.window %}
    {% if window is not none %}
        {#- (a scope that names models has no event source: rows_over_models adds the window's
            keys from its rows' event dates) -#}
        {% set event_source = source(scope.event.source_name, scope.event.table) %}
        {% set event_time = scope.event.column %}
        {% set event_date = plan.declared.event_date %}
        {% set in_window %}
            select {{ backfill_safe.key_as(scope, scope.event) }} from {{ event_source }}
            where
                cast({{ event_time }} as date) >= date'{{ window.start }}'
                and cast({{ event_time }} as date) < date'{{ window.end }}'
            union
            select {{ key }} from {{ this }}
            where {{ event_date }} >= date'{{ window.start }}' and {{ event_date }} < date'{{ window.end }}'
        {% endset %}
        {{ return(in_window) }}
    {% endif %}
    {% set branches = [] %}
    {% for direct in scope.direct %}
        {% set changed_versions = backfill_safe.changed_versions_predicate(plan, direct.update_column) %}
        {% if changed_versions is none %}
            {{ return(none) }}
        {% endif %}
        {% do branches.append("select " ~ backfill_safe.key_as(scope, direct)
            ~ " from " ~ source(direct.source_name, direct.table)
            ~ " where " ~ changed_versions) %}
    {% endfor %}
    {% for reached in scope.through %}
        {% do branches.extend(backfill_safe.scope_keys_through(scope, reached)) %}
    {% endfor %}
    {{ return(branches | join("\nunion\n")) }}
{% endmacro %}

{#- The branches of scope_keys_select for a source reached through a direct one (`reached`, an entry
    of the scope declaration's `through`): SQL selects of the scope key.
    Not effective-dated (a header, a many-to-one member): the keys of the direct source's
    versions naming an `on` with a changed version.
    Effective-dated (type 2: a version is in effect from its update time T until the next):
    a changed version is in effect only for the keys whose event time is at or after T (the
    latest version effective at the event time), or, when it is the `on`'s earliest version,
    for the keys with an event time before any version too. So its keys are those of the
    direct versions naming the `on` whose event source has a version at or after T (every
    version's event time: a superset), plus every key naming an `on` whose earliest version
    changed. Before this, every key that ever named the `on` was in scope: a few changes of a
    member put most of the keys naming it in a daily run's scope, to restate the few placed
    after them (docs/benchmarks/history.md). It reads the `on` of every version of the direct
    source (nothing to prune), so it is left out when no version of the reached source was
    updated after the lower bound (one memoized probe tells); the event source is read from
    the earliest such T on (a literal: Iceberg prunes its files by the event time's bounds). -#}
{% macro scope_keys_through(scope, reached) %}
    {% set key = scope.key %}
    {% set on = reached.on %}
    {% set updated = reached.update_column %}
    {% set members = source(reached.source_name, reached.table) %}
    {% set via = source(reached.via.source_name, reached.via.table) %}
    {% set changed_versions = backfill_safe.changed_versions_predicate(
        backfill_safe.run_plan(), updated) %}
    {% if not reached.effective_dated %}
        {{ return(["select " ~ backfill_safe.key_as(scope, reached.via) ~ " from " ~ via
            ~ " where " ~ on ~ " in (select " ~ on ~ " from " ~ members
            ~ " where " ~ changed_versions ~ ")"]) }}
    {% endif %}
    {% set via_key = backfill_safe.scope_key_column(scope, reached.via) %}
    {% set event_key = backfill_safe.scope_key_column(scope, scope.event) %}
    {% set first_change = backfill_safe.memoized_rows(
        "select date_format(min(" ~ updated ~ "), 'yyyy-MM-dd HH:mm:ss.SSSSSS') from " ~ members
        ~ " where " ~ changed_versions)[0][0] %}
    {% if first_change is none %}
        {{ return([]) }}
    {% endif %}
    {% if not modules.re.fullmatch(
            '[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{6}', first_change | string) %}
        {{ exceptions.raise_compiler_error(
            "model " ~ this ~ ": " ~ reached.name ~ "." ~ updated ~ " gave a time " ~ first_change) }}
    {% endif %}
    {% set event_source = source(scope.event.source_name, scope.event.table) %}
    {% set event_time = scope.event.column %}
    {% set reached_keys %}
        select reaching.{{ via_key }} as {{ key }}
        from {{ via }} as reaching
        inner join (
            select changed.{{ on }}, min(changed.{{ updated }}) as effective_from
            from {{ members }} as changed
            where {{ changed_versions }}
            group by changed.{{ on }}
        ) as changed
            on reaching.{{ on }} = changed.{{ on }}
        inner join (
            select {{ event_key }}, {{ event_time }} from {{ event_source }}
            where {{ event_time }} >= timestamp'{{ first_change }}'
        ) as events
            on reaching.{{ via_key }} = events.{{ event_key }}
        where events.{{ event_time }} >= changed.effective_from
    {% endset %}
    {% set earliest_changed %}
        select {{ backfill_safe.key_as(scope, reached.via) }} from {{ via }}
        where {{ on }} in (
            select changed.{{ on }}
            from {{ members }} as changed
            where
                ({{ changed_versions }})
                and not exists (
                    select 1 from {{ members }} as earlier
                    where earlier.{{ on }} = changed.{{ on }} and earlier.{{ updated }} < changed.{{ updated }}
                )
        )
    {% endset %}
    {{ return([reached_keys, earliest_changed]) }}
{% endmacro %}

{#- The column of a direct source (`table`: {source_name, table}) that holds the scope key
    (the scope declaration's key_columns: the key's own name unless the declaration maps it). -#}
{% macro scope_key_column(scope, table) %}
    {{ return(scope.key_columns[table.source_name ~ '.' ~ table.table]) }}
{% endmacro %}

{#- The select expression of the scope key from a direct source: its key column, named as the
    model's key when the source names it otherwise. -#}
{% macro key_as(scope, table) %}
    {% set column = backfill_safe.scope_key_column(scope, table) %}
    {{ return(column if column == scope.key else column ~ " as " ~ scope.key) }}
{% endmacro %}
