{#- The framework's kind, as a dbt materialization: `materialized='backfill_safe'`. A package's
    materialization is found without any `dispatch:` block, so a team's model gets the kind, and
    its guards, by naming it. The model's select is its business SQL:
    - a fact: its rows as they should be now, with `is_deleted` (true for a row that must not
      be in the table; a model over models' select may leave it out: flagged_rows), one row
      per unique key; its declaration (config.meta.backfill_safe,
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
    current state it keeps when it names none (maintain_current_state), the watermark's advance
    noted (advance_watermark), the staged source dropped, the model's
    `grants` applied (apply_grants; refused by name unless var grants_supported). -#}
{% materialization backfill_safe, adapter='spark' %}
    {#- what this invocation does with the model, decided once (the select's compilation read
        the same plan) -#}
    {%- do backfill_safe.reset_stale_mark() -%}
    {%- set plan = backfill_safe.run_plan() -%}
    {%- set declared = plan.declared -%}
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
    {%- set existing_relation = plan.existing_relation -%}
    {%- set full_build = plan.full_build -%}
    {#- nothing landed in its inputs since its last run: nothing to compute, stage or merge -#}
    {%- set idle = none if full_build else backfill_safe.idle_merge_statement() -%}
    {%- set rows = none if idle else backfill_safe.kind_rows(plan, compiled_code, columns) -%}
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
        {%- do backfill_safe.mark_full_build() -%}
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
        {%- set merge = backfill_safe.guarded_merge_sql(this, tmp_relation, unique_key,
            config.get('incremental_predicates'), rows if staged else none, described) -%}
        {#- a model maintained by deltas: the MERGE staged and published with the change
            records it applies (additive_deltas) -#}
        {%- do backfill_safe.consumption_stamp('before', merge) -%}
        {%- call statement('main') -%}
            {{ merge }}
        {%- endcall -%}
        {%- do backfill_safe.consumption_stamp('after', merge) -%}
        {%- do backfill_safe.mark_without_rows(merge) -%}
    {%- endif -%}
    {#- a mart's current state, when the framework keeps it: its select, unscoped -#}
    {%- set current_state_view = backfill_safe.maintain_current_state(compiled_code) -%}
    {%- do backfill_safe.advance_watermark() -%}
    {%- set drop_staged = '' if idle else backfill_safe.drop_staged_merge_source() | trim -%}
    {%- if drop_staged -%}
        {%- call statement('drop_staged_merge_source', fetch_result=false) -%}
            {{ drop_staged }}
        {%- endcall -%}
    {%- endif -%}
    {#- a delta run's groups' moves, staged to scratch (additive_deltas) -#}
    {%- set drop_deltas = backfill_safe.drop_staged_deltas() | trim -%}
    {%- if drop_deltas -%}
        {%- call statement('drop_staged_deltas', fetch_result=false) -%}
            {{ drop_deltas }}
        {%- endcall -%}
    {%- endif -%}
    {#- as dbt-spark's incremental, before the post-hooks (a grant one makes is kept): revoked
        first when the table was kept or replaced -#}
    {%- if grant_config -%}
        {%- do apply_grants(this, grant_config, should_revoke(existing_relation, full_build)) -%}
    {%- endif -%}
    {{ run_hooks(post_hooks) }}
    {%- do persist_docs(this, model) -%}
    {{ return({'relations': [this] + ([current_state_view] if current_state_view else [])}) }}
{% endmaterialization %}
