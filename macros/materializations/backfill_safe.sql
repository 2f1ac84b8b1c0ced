{#- The framework's kind, as a dbt materialization: `materialized='backfill_safe'`. A package's
    materialization is found without any `dispatch:` block, so a team's model gets the kind, and
    its guards, by naming it. The model's select is its business SQL:
    - a fact: its rows as they should be now, with `is_deleted` (true for a row that must not
      be in the table), one row per unique key; its declaration (config.meta.backfill_safe,
      declared_model) names its event date, lookback and scope;
    - a dimension (declaration `dimension`, declared_dimension): its members' versions (type 2)
      or current versions (type 1), with the member key, `is_deleted` and `updated_at`; the
      kind writes the surrogate key, the validity interval and the unknown member;
    - a reference table (declaration `reference: true`, declared_reference): every row, on
      every run (a calendar, a list of codes); a run merges the new and changed ones.
    A full build (no table yet, or --full-refresh) writes the live rows (kind_rows). An
    incremental run whose inputs landed nothing since the last one does nothing but say so
    (idle_merge_statement); any other incremental run restricts the select to the run's scope
    (kind_rows: the keys its changes reach, the lower bound of rule 1, the rows awaiting a
    member; a backfill's window), sends
    only the rows that differ from the table, flagged `_is_deleted` (rows_to_merge), and merges
    them with guarded_merge_sql (staged, key and partition literals, no MERGE when nothing
    changed). Around the statement: the scope caches are made
    first (before a backfill's branch is set, as the select's compilation made them), then a
    backfill's branch (use_backfill_branch), the model's own pre-hooks and post-hooks, the
    watermark's advance noted (advance_watermark), the staged source dropped, the model's
    `grants` applied (apply_grants; refused by name unless var grants_supported). -#}
{% materialization backfill_safe, adapter='spark' %}
    {%- set declared = backfill_safe.declared_model(graph.nodes[model.unique_id]) -%}
    {%- set unique_key = declared.unique_key -%}
    {%- set columns = model.columns.keys() | list -%}
    {%- if not columns -%}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ " ("
            ~ model.original_file_path ~ "): a model materialized 'backfill_safe' documents its "
            ~ "columns in its yml (they are its table's)") }}
    {%- endif -%}
    {%- set grant_config = config.get('grants') -%}
    {%- if grant_config and (var('grants_supported', false) | string | lower) != 'true' -%}
        {#- refused before anything is written: open-source Spark SQL parses no GRANT -#}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ " ("
            ~ model.original_file_path ~ "): config grants " ~ grant_config ~ " cannot be "
            ~ "applied: open-source Spark SQL (the embedded session, a Spark Thrift Server) has "
            ~ "no GRANT statement. Remove them for this target, or set var grants_supported: "
            ~ "true on an engine that grants (they are then applied after each run, as "
            ~ "dbt-spark's incremental materialization applies them)") }}
    {%- endif -%}
    {%- set existing_relation = load_relation(this) -%}
    {%- set full_build = existing_relation is none or existing_relation.is_view
        or should_full_refresh() -%}
    {#- nothing landed in its inputs since its last run: nothing to compute, stage or merge -#}
    {%- set idle = none if full_build else backfill_safe.idle_merge_statement() -%}
    {%- set rows = none if idle else backfill_safe.kind_rows(declared, compiled_code, columns,
        full_build) -%}
    {%- if not full_build and not idle and declared.reference -%}
        {%- set idle = backfill_safe.idle_reference_statement(rows) -%}
    {%- endif -%}
    {%- set branch = backfill_safe.use_backfill_branch() | trim -%}
    {%- if branch -%}
        {%- call statement('use_backfill_branch', fetch_result=false) -%}
            {{ branch }}
        {%- endcall -%}
    {%- endif -%}
    {{ run_hooks(pre_hooks) }}
    {%- if full_build -%}
        {%- if existing_relation is not none -%}
            {%- do adapter.drop_relation(existing_relation) -%}
        {%- endif -%}
        {%- call statement('main') -%}
            {{ create_table_as(False, this, rows) }}
        {%- endcall -%}
        {%- do backfill_safe.check_event_date_type(declared, this) -%}
        {%- do persist_constraints(this, model) -%}
        {%- do backfill_safe.kind_table_properties(this) -%}
        {%- do backfill_safe.record_model_rebuilt(this) -%}
    {%- elif idle -%}
        {%- call statement('main') -%}
            {{ idle }}
        {%- endcall -%}
        {%- do backfill_safe.idle_runs().update({model.unique_id: true}) -%}
    {%- else -%}
        {#- the rows to merge, staged once to a scratch table (stage_merge_source), or as
            dbt-spark's temporary view when the model's meta says stage_merge_source: false -#}
        {%- set tmp_relation = backfill_safe.stage_merge_source(rows) -%}
        {%- set staged = tmp_relation is not none -%}
        {%- if not staged -%}
            {%- set tmp_relation = this.incorporate(path={"identifier": this.identifier ~ '__dbt_tmp'})
                .include(database=false, schema=false) -%}
            {%- call statement('create_tmp_relation') -%}
                {{ create_table_as(True, tmp_relation, rows) }}
            {%- endcall -%}
        {%- endif -%}
        {#- on_schema_change `fail`: the select's types against the table's, as dbt compares
            them (its `_is_deleted` flag aside), with the framework's check itself, so a team
            needs no dispatch block for it; `ignore`: none. Names were compared as the rows
            were built (rows_to_merge). -#}
        {%- set described = none -%}
        {%- if config.get('on_schema_change') == 'fail' -%}
            {%- set changes = backfill_safe.spark__check_for_schema_changes(
                tmp_relation, existing_relation) -%}
            {#- the MERGE's column lists from the same describes (not two more) -#}
            {%- set described = {
                'target': changes.target_columns | map(attribute='name') | list,
                'source': changes.source_column_names} -%}
            {%- if changes.schema_changed -%}
                {%- if staged -%}
                    {%- call statement('drop_staged_merge_source', fetch_result=false) -%}
                        {{ backfill_safe.drop_staged_merge_source() }}
                    {%- endcall -%}
                {%- endif -%}
                {{ exceptions.raise_compiler_error("model " ~ model.name ~ ": the source and "
                    ~ "target schemas on this incremental model are out of sync (on_schema_change "
                    ~ "fail): source columns not in target: " ~ changes.source_not_in_target
                    ~ ", target columns not in source: " ~ changes.target_not_in_source
                    ~ ", new column types: " ~ changes.new_target_types
                    ~ ". Rebuild it with --full-refresh, or migrate the table first.") }}
            {%- endif -%}
        {%- endif -%}
        {%- call statement('main') -%}
            {{ backfill_safe.guarded_merge_sql(this, tmp_relation, unique_key,
                config.get('incremental_predicates'), rows if staged else none, described) }}
        {%- endcall -%}
    {%- endif -%}
    {%- do backfill_safe.advance_watermark() -%}
    {%- set drop_staged = '' if idle else backfill_safe.drop_staged_merge_source() | trim -%}
    {%- if drop_staged -%}
        {%- call statement('drop_staged_merge_source', fetch_result=false) -%}
            {{ drop_staged }}
        {%- endcall -%}
    {%- endif -%}
    {#- as dbt-spark's incremental, before the post-hooks (a grant one makes is kept): revoked
        first when the table was kept or replaced -#}
    {%- if grant_config -%}
        {%- do apply_grants(this, grant_config, should_revoke(existing_relation, full_build)) -%}
    {%- endif -%}
    {{ run_hooks(post_hooks) }}
    {%- do persist_docs(this, model) -%}
    {{ return({'relations': [this]}) }}
{% endmaterialization %}


{#- What a run of a model of the kind writes, as one select over its body (`body`, the model's
    compiled select): on a full build the table's rows (`columns`, in order); on an
    incremental run the rows to merge, flagged `_is_deleted` (rows_to_merge). A fact's run is
    restricted to its scope here (scope_predicate, and with a declared scope the keys its
    changes reach, cached once: scope_keys_cached). -#}
{% macro kind_rows(declared, body, columns, full_build) %}
    {% if declared.dimension is not none %}
        {{ return(backfill_safe.dimension_rows(declared, body, columns, full_build)) }}
    {% endif %}
    {% if declared.reference %}
        {#- a reference table (declared_reference): every row, on every run; merged where new
            or different from the table -#}
        {% set live = "(select " ~ columns | join(", ") ~ " from (\n" ~ body
            ~ "\n) as reference_rows)" %}
        {{ return(("select * from " ~ live ~ " as live") if full_build
            else backfill_safe.rows_to_merge(live, none, declared.unique_key, none)) }}
    {% endif %}
    {% if full_build %}
        {{ return("select " ~ columns | join(", ") ~ " from (\n" ~ body
            ~ "\n) as current_state where not is_deleted") }}
    {% endif %}
    {% if declared.scope is not none and declared.scope.models %}
        {{ return(backfill_safe.rows_over_models(declared, body)) }}
    {% endif %}
    {#- the keys first: caching them counts the rows awaiting a member, which the predicate
        reads -#}
    {% set keys = backfill_safe.scope_keys_cached() if declared.scope is not none else none %}
    {% set scope = backfill_safe.scope_predicate(declared.lookback, declared.event_date,
        declared.unique_key, awaiting=(declared.scope or {}).get('awaiting')) %}
    {% set filters = [] %}
    {% if keys %}
        {% do filters.append(declared.scope.key ~ " in (" ~ keys ~ ")") %}
    {% endif %}
    {% if scope %}
        {% do filters.append("(" ~ scope ~ ")") %}
    {% endif %}
    {% set changes = "(select * from (\n" ~ body ~ "\n) as current_state"
        ~ ((" where " ~ filters | join(" and ")) if filters else "") ~ ")" %}
    {{ return(backfill_safe.rows_to_merge(none, changes, declared.unique_key,
        backfill_safe.scope_existing_rows(keys))) }}
{% endmacro %}


{#- The rows to merge of an incremental run of a model whose scope's changes are models of the
    kind (scope_model_changes: an aggregate, a mart over a fact): its select (`body`) for the
    keys in the run's scope only (scope_keys_cached: the keys its upstream models' runs changed
    since its last committed run; in a backfill those this invocation's runs changed, and the
    keys of the window's rows), and every row of the table of those keys: a key's rows are
    recomputed whole from its upstream tables, and a row of the table its select no longer gives
    (a group that lost all its rows) is deleted (rows_to_merge's `vanished`). The keys are
    literals when the key is the event date or a partition column and they are few (var
    merge_scope_literals_max): Spark pushes them through the select's grouping down to the
    upstream table's scan, where Iceberg prunes by them; other keys are the cached subquery. -#}
{% macro rows_over_models(declared, body) %}
    {% set scope = declared.scope %}
    {% set key = scope.key %}
    {#- nothing recorded upstream since its last run (one probe): no row to merge, and nothing
        cached or read to find it (guarded_merge_sql then stages nothing) -#}
    {% if backfill_safe.nothing_changed_upstream(scope) %}
        {{ return("select *, false as _is_deleted from " ~ this ~ " where false") }}
    {% endif %}
    {% set keys = backfill_safe.scope_keys_cached() %}
    {% set window = backfill_safe.backfill_window() %}
    {% set terms = [] %}
    {% if keys %}
        {#- as literals where they let Iceberg prune at planning (the event date, a partition
            column: a daily aggregate's dates); else the cached keys, which Spark joins below
            the select's grouping (a customer mart's customers: thousands of literals, parsed
            and optimized in every reference, cost more than the join; 38 s against 6 s at
            1M lines) -#}
        {% set partitioned = config.get('partition_by') or [] %}
        {% set partition_columns = [partitioned] if partitioned is string else partitioned %}
        {% set literals = backfill_safe.scope_key_literals(keys)
            if key == declared.event_date or key in partition_columns else none %}
        {% do terms.append(key ~ " in (" ~ (literals or keys) ~ ")") %}
    {% endif %}
    {% if window is not none %}
        {#- the window's rows, and every row of a key the table holds in it (a row that moved
            out of the window is restated too) -#}
        {% set in_window = declared.event_date ~ " >= date'" ~ window.start ~ "' and "
            ~ declared.event_date ~ " < date'" ~ window.end ~ "'" %}
        {% do terms.append("(" ~ in_window ~ ")") %}
        {% do terms.append(key ~ " in (select " ~ key ~ " from " ~ this ~ " where "
            ~ in_window ~ ")") %}
    {% endif %}
    {% set predicate = ("(" ~ terms | join(" or ") ~ ")") if terms else none %}
    {% set changes = "(select * from (\n" ~ body ~ "\n) as current_state"
        ~ ((" where " ~ predicate) if predicate else "") ~ ")" %}
    {{ return(backfill_safe.rows_to_merge(none, changes, declared.unique_key,
        predicate, vanished=true)) }}
{% endmacro %}


{#- A dimension's rows (declared_dimension): its surrogate key (surrogate_key of the member key,
    and for type 2 of the update time), the body's columns, for type 2 the validity interval
    (effective_interval), and the unknown member. An incremental run restricts the body to
    the members with a version in its scope (scope_predicate: updated after the lower bound)
    and those the table does not hold yet (a late-arriving member: the facts waiting on it
    re-key as soon as it lands); type 2 rebuilds every version of such a member, so a late
    version both appears and closes the interval before it (versions_of_changed_members).
    Only the rows that differ from the table are merged (rows_to_merge). -#}
{% macro dimension_rows(declared, body, columns, full_build) %}
    {% set dimension = declared.dimension %}
    {% set member_key = dimension.member_key %}
    {% set scope = none if full_build else backfill_safe.scope_predicate(declared.lookback) %}
    {% set versions = "(\n" ~ body ~ "\n)" %}
    {% if dimension.type == 2 %}
        {% set scoped = backfill_safe.versions_of_changed_members(versions, member_key, scope) %}
        {% set derived = backfill_safe.surrogate_key([member_key, 'updated_at']) ~ " as "
            ~ declared.unique_key ~ ", versions.*, " ~ backfill_safe.effective_interval(member_key) %}
    {% else %}
        {#- the members with a version landed since the last committed run started: a superset
            of the scope (every version in it landed since, and so did every member the table
            does not hold yet: that run loaded every one landed before it), on the landed
            sources' own columns, where Spark and Iceberg can restrict the staging by it -#}
        {% set landed = [] %}
        {% set bound = backfill_safe.incremental_landed_bound() if scope else none %}
        {% for source_id in (backfill_safe.landed_inputs(model.unique_id) if bound else []) %}
            {% set src = graph.sources[source_id] %}
            {% if member_key in backfill_safe.landing_contract(src.source_name, src.name).columns %}
                {% do landed.append("select " ~ member_key ~ " from "
                    ~ source(src.source_name, src.name) ~ " where _loaded_at > " ~ bound) %}
            {% endif %}
        {% endfor %}
        {% set scoped %}
            select * from {{ versions }} as versions
            {%- if scope %}
            where
                {%- if landed %}
                {{ member_key }} in ({{ landed | join(' union all ') }}) and (
                {%- endif %}
                {{ scope }}
                -- not exists, not `not in`: a null key in the table must not empty the result
                or not exists (
                    select 1 from {{ this }} as known
                    where known.{{ member_key }} = versions.{{ member_key }}
                )
                {%- if landed %}
                )
                {%- endif %}
            {%- endif %}
        {% endset %}
        {% set derived = backfill_safe.surrogate_key([member_key]) ~ " as "
            ~ declared.unique_key ~ ", versions.*" %}
    {% endif %}
    {#- the unknown member: the row facts point to while their member has not arrived -#}
    {% set given = dimension.unknown_member %}
    {% set framework = {
        declared.unique_key: backfill_safe.unknown_member_key(),
        'is_deleted': 'false', 'is_current': 'true', 'valid_to': 'cast(null as timestamp)',
        'valid_from': "cast('1900-01-01 00:00:00' as timestamp)",
        'updated_at': "cast('1900-01-01 00:00:00' as timestamp)"} %}
    {% set unknown_values = [] %}
    {% for column in columns %}
        {% if column in framework %}
            {% set value = framework[column] %}
        {% elif column in given %}
            {% set value = backfill_safe.sql_literal(given[column]) %}
        {% elif column == member_key %}
            {% set value = '-1' %}
        {% else %}
            {% set value = 'null' %}
        {% endif %}
        {% do unknown_values.append(value ~ " as " ~ column) %}
    {% endfor %}
    {% set live %}
        (select {{ columns | join(', ') }}
        from (
            select {{ derived }}
            from ({{ scoped }}) as versions
        ) as dimension
        union all
        select {{ unknown_values | join(', ') }})
    {% endset %}
    {% if full_build %}
        {{ return("select * from " ~ live ~ " as live") }}
    {% endif %}
    {{ return(backfill_safe.rows_to_merge(live, none, declared.unique_key, none)) }}
{% endmacro %}


{#- The table properties the kind needs, set on a table it created when the model's config
    did not: a backfill writes to a branch of the table (write.wap.enabled; spark.wap.branch
    is silently ignored without it), and a daily MERGE writes its changed rows and delete
    files (merge-on-read) instead of rewriting every data file that holds a changed row. -#}
{#- A full build's table, refused (dropped, so the next run builds it again and is refused
    again) when the declared event date is not a DATE column: restate, backfill windows and the
    audit's dates compare it with dates, and a timestamp failed only there, late (`pipeline
    restate` exited 2 after printing its plan). One describe, on full builds only. -#}
{% macro check_event_date_type(declared, relation) %}
    {% if not declared.event_date %}
        {{ return(none) }}
    {% endif %}
    {% set found = adapter.get_columns_in_relation(relation)
        | selectattr('name', 'equalto', declared.event_date) | map(attribute='data_type')
        | list %}
    {% if found and found[0] | lower != 'date' %}
        {% do adapter.drop_relation(relation.incorporate(type='table')) %}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ " ("
            ~ model.original_file_path ~ "): config.meta.backfill_safe event_date '"
            ~ declared.event_date ~ "' is a " ~ found[0] ~ " column; it must be a DATE (cast it "
            ~ "in the select: cast(... as date) as " ~ declared.event_date ~ "). The table was "
            ~ "not kept") }}
    {% endif %}
{% endmacro %}


{% macro kind_table_properties(relation) %}
    {% set wanted = {'write.wap.enabled': 'true', 'write.merge.mode': 'merge-on-read',
                     'write.update.mode': 'merge-on-read', 'write.delete.mode': 'merge-on-read'} %}
    {% set given = config.get('tblproperties') or {} %}
    {% set missing = [] %}
    {% for name, value in wanted.items() if name not in given %}
        {% do missing.append("'" ~ name ~ "' = '" ~ value ~ "'") %}
    {% endfor %}
    {% if missing %}
        {% call statement('kind_table_properties', fetch_result=false) %}
            alter table {{ relation }} set tblproperties ({{ missing | join(', ') }})
        {% endcall %}
    {% endif %}
{% endmacro %}
