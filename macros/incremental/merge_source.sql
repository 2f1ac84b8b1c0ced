{#- The final select of every incremental model: what reaches the MERGE.
    - Full build: the rows of `live` (a CTE of current, non-deleted rows), as they are.
    - Incremental, with `changes` (a CTE of the scoped current state: every column of the table
      plus `is_deleted`, one row per unique key): one pass. `changes` is left-joined to the table
      on the unique key once; a live row is sent only when it differs from the table's row
      (null-safe, every column: an unchanged row is not rewritten and a rerun changes nothing),
      flagged `_is_deleted = false`; a deleted key is sent as the table's row flagged
      `_is_deleted = true`, only when the table holds it (rule 6). The current state and the
      table are each read once (the MERGE then reads this source twice: copy-on-write file
      pruning and the join). The model's columns are those documented in its yml, which must
      be the table's.
    - Incremental, without `changes` (dimensions, which keep deleted members flagged): the rows
      of `live` that differ from the table (a null-safe anti-join over every column).
    `existing` (incremental with `changes`): a predicate on the table's columns that holds for
    every row of the keys in `changes` (scope_existing_rows: the run's order dates, so only those
    partitions are read, and its orders, so only the rows the keys can match are joined).
    guarded_merge_sql turns the flag into DELETE / UPDATE / INSERT. -#}
{% macro merge_source(live, changes=none, unique_key=none, existing=none) %}
    {% if not execute %}
        {#- parse time: the kind brings its own hooks, so a model gets them wherever it lives (a
            team's project that installs the framework as a package too; folder config of a
            package applies to the package's own models only). Before the model's statement, a
            backfill's branch (use_backfill_branch); after it, rule 2's watermark, then the
            staged source dropped. dbt appends them after hooks the model declares itself. -#}
        {% do config(
            tags=['backfill_safe'],
            pre_hook=["{{ backfill_safe.use_backfill_branch() }}"],
            post_hook=["{{ backfill_safe.advance_watermark() }}",
                       "{{ backfill_safe.drop_staged_merge_source() }}"]) %}
    {% else %}
        {#- the kind's configuration, checked as the model compiles (is_framework_model) -#}
        {% do backfill_safe.check_framework_declaration(model) %}
    {% endif %}
    {% if not backfill_safe.is_incremental_run() %}
        select * from {{ live }}
    {% else %}
        {{ backfill_safe.rows_to_merge(live, changes, unique_key, existing) }}
    {% endif %}
{% endmacro %}

{#- The rows an incremental run sends to the MERGE, flagged `_is_deleted` (merge_source's
    incremental half, and the materialization's): `live` and `changes` are CTE names or
    parenthesized selects; see merge_source. -#}
{% macro rows_to_merge(live, changes=none, unique_key=none, existing=none) %}
    {% set columns = adapter.get_columns_in_relation(this) | map(attribute='name') | list %}
    {#- the select is written with the table's column names, so a column added to (or
        dropped from) the model would be silently left out (or fail in Spark's analysis):
        the model's yml columns are compared with the table's first. `changes` needs them
        (every mart documents all of them); without `changes` they are compared when the
        yml declares columns (a model with an enforced contract must) -#}
    {% set declared = model.columns.keys() | list %}
    {% if declared or changes is not none %}
        {% set missing = columns | reject('in', declared) | list %}
        {% set extra = declared | reject('in', columns) | list %}
        {% if not declared or missing or extra %}
            {{ exceptions.raise_compiler_error(
                "model " ~ this ~ ": its select no longer matches the table (table columns "
                ~ "the model does not declare in its yml: " ~ missing ~ ", declared columns "
                ~ "the table has not: " ~ extra ~ "). Rebuild it with --full-refresh, or "
                ~ "migrate the table first.") }}
        {% endif %}
    {% endif %}
    {% if changes is none %}
    select
        {%- for column in columns %}
        changed.{{ column }},
        {%- endfor %}
        false as _is_deleted
    from {{ live }} as changed
    left anti join {{ this }} as existing
        on
        {%- for column in columns %}
        changed.{{ column }} <=> existing.{{ column }}{{ " and" if not loop.last }}
        {%- endfor %}
    {% else %}
    {% if unique_key is none %}
        {{ exceptions.raise_compiler_error(
            "model " ~ this ~ ": merge_source(changes=...) needs the unique_key") }}
    {% endif %}
    select
        {%- for column in columns %}
        case
            when changes.is_deleted then existing.{{ column }} else changes.{{ column }}
        end as {{ column }},
        {%- endfor %}
        changes.is_deleted as _is_deleted
    from {{ changes }} as changes
    left join (
        select * from {{ this }}
        {%- if existing %}
        where {{ existing }}
        {%- endif %}
    ) as existing
        on changes.{{ unique_key }} = existing.{{ unique_key }}
    where
        (changes.is_deleted and existing.{{ unique_key }} is not null)
        or (
            not changes.is_deleted
            and not (
                {%- for column in columns %}
                changes.{{ column }} <=> existing.{{ column }}{{ " and" if not loop.last }}
                {%- endfor %}
            )
        )
    {% endif %}
{% endmacro %}
