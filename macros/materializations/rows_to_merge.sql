{#- The old way of the framework's kind, refused: a model whose select ended with
    merge_source('live', 'changes', ...) and declared the kind's plumbing itself. A model of the
    kind is materialized 'backfill_safe' and its select ends with its rows; the materialization
    does what the call did (rows_to_merge). The call is kept only to name the model and the
    guide: dbt records it in the model's depends_on.macros as it parses, so the on-run-start
    check (check_framework_declaration) refuses the model before anything runs, and this
    refuses it as it compiles. -#}
{% macro merge_source(live=none, changes=none, unique_key=none, existing=none) %}
    {% if execute %}
        {{ exceptions.raise_compiler_error(backfill_safe.old_way_message(model)) }}
    {% endif %}
{% endmacro %}

{#- The message that refuses a model written the old way (merge_source()). -#}
{% macro old_way_message(node) %}
    {{ return("model " ~ node.name ~ " (" ~ node.original_file_path ~ "): its select ends with "
        ~ "merge_source(), the old way of the framework's kind: set materialized='backfill_safe' "
        ~ "and end the select with the model's rows, deleted ones flagged is_deleted; the "
        ~ "declaration goes to config.meta.backfill_safe (docs/guides/add-a-source-and-a-model.md)") }}
{% endmacro %}

{#- The rows an incremental run of a model of the kind sends to the MERGE, flagged
    `_is_deleted` (called by the materialization: kind_rows, dimension_rows). `live` and
    `changes` are parenthesized selects.
    - With `changes` (the scoped current state: every column of the table plus `is_deleted`,
      one row per unique key): one pass. `changes` is left-joined to the table on the unique
      key once; a live row is sent only when it differs from the table's row (null-safe, every
      column: an unchanged row is not rewritten and a rerun changes nothing), flagged
      `_is_deleted = false`; a deleted key is sent as the table's row flagged `_is_deleted =
      true`, only when the table holds it (rule 6). `existing`: a predicate on the table's
      columns that holds for every row of the keys in `changes` (scope_existing_rows: the run's
      event dates, so only those partitions are read, and its keys, so only the rows the keys
      can match are joined). With `vanished` (a model over models): a full outer join
      instead, which also deletes the table's rows in scope that the select no longer gives (a
      group that lost all its rows), `changes` computed once.
    - Without `changes` (dimensions, which keep deleted members flagged, and reference tables):
      the rows of `live` that differ from the table (a null-safe anti-join over every column).
    The model's columns are those documented in its yml, which must be the table's.
    guarded_merge_sql turns the flag into DELETE / UPDATE / INSERT. -#}
{% macro rows_to_merge(live, changes=none, unique_key=none, existing=none, vanished=false) %}
    {% set columns = backfill_safe.column_names(this) %}
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
        on {{ backfill_safe.same_row('changed', 'existing', columns) }}
    {% else %}
    {% if unique_key is none %}
        {{ exceptions.raise_compiler_error(
            "model " ~ this ~ ": rows_to_merge(changes=...) needs the unique_key") }}
    {% endif %}
    {%- if vanished %}
        {%- set source = "(select given.*, true as _in_select from " ~ changes ~ " as given)" %}
        {%- set gone = "changes._in_select is null or changes.is_deleted" %}
    {%- else %}
        {%- set source = changes %}
        {%- set gone = "changes.is_deleted" %}
    {%- endif %}
    select
        {%- for column in columns %}
        case when {{ gone }} then existing.{{ column }} else changes.{{ column }} end
            as {{ column }},
        {%- endfor %}
        ({{ gone }}) as _is_deleted
    from {{ source }} as changes
    {{ "full outer join" if vanished else "left join" }} (
        select * from {{ this }}
        {%- if existing %}
        where {{ existing }}
        {%- endif %}
    ) as existing
        on changes.{{ unique_key }} = existing.{{ unique_key }}
    where
        {%- if vanished %}
        -- the table's rows in scope that the select no longer gives: deleted
        changes._in_select is null or
        {%- endif %}
        (changes.is_deleted and existing.{{ unique_key }} is not null)
        or (
            not changes.is_deleted
            and not {{ backfill_safe.same_row('changes', 'existing', columns) }}
        )
    {% endif %}
{% endmacro %}
