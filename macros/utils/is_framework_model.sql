{#- The framework's kind: a model materialized `backfill_safe` (the materialization
    materialization_backfill_safe_spark), or, written the old way, an incremental model whose
    select ends with merge_source() (dbt records that call in the node's depends_on.macros when
    it parses the model). Either way the kind is known for every node of the graph before
    anything runs.
    Only such a model gets guarded_merge_sql, the watermark, the staged MERGE source and the run
    records; every other model keeps dbt-spark's behaviour (merge, append, insert_overwrite,
    microbatch), whatever folder config it shares with them. `node`: a node of the graph, or
    the model being run (default). -#}
{% macro is_framework_model(node=none) %}
    {% set node = model if node is none else node %}
    {% if node is not none and node.config is defined
        and node.config.materialized == 'backfill_safe' %}
        {{ return(true) }}
    {% endif %}
    {% set depends_on = node.depends_on
        if node is not none and node.depends_on is defined else none %}
    {% for macro_id in (depends_on.macros if depends_on is not none else []) %}
        {% if macro_id.split('.')[-1] == 'merge_source' %}
            {{ return(true) }}
        {% endif %}
    {% endfor %}
    {{ return(false) }}
{% endmacro %}


{#- A model that declares part of the kind is refused before it runs, naming what is missing:
    merge_source() needs an incremental model with the merge strategy, one unique_key and the
    iceberg file format; config.meta.backfill_safe (the restate and audit declaration) needs
    the kind. `node`: a model node; returns nothing, raises a compiler error. -#}
{% macro check_framework_declaration(node) %}
    {% set where = "model " ~ node.name ~ " (" ~ node.original_file_path ~ ")" %}
    {% set cfg = node.config %}
    {% set calls_merge_source = namespace(found=false) %}
    {% for macro_id in node.depends_on.macros if macro_id.split('.')[-1] == 'merge_source' %}
        {% set calls_merge_source.found = true %}
    {% endfor %}
    {% set calls_merge_source = calls_merge_source.found %}
    {% if cfg.materialized == 'backfill_safe' %}
        {% set problems = [] %}
        {% if calls_merge_source %}
            {% do problems.append("no merge_source() call: the materialization does what it "
                ~ "did; the select ends with the model's rows, deleted ones flagged is_deleted") %}
        {% endif %}
        {% if cfg.unique_key is not string or not cfg.unique_key %}
            {% do problems.append("one unique_key column (it is " ~ cfg.unique_key ~ ")") %}
        {% endif %}
        {% if cfg.file_format != 'iceberg' %}
            {% do problems.append(
                "file_format='iceberg' (it is '" ~ cfg.file_format ~ "')") %}
        {% endif %}
        {% if cfg.on_schema_change is defined
            and cfg.on_schema_change not in [none, 'ignore', 'fail'] %}
            {% do problems.append("on_schema_change 'ignore' or 'fail' (it is '"
                ~ cfg.on_schema_change ~ "': a column change goes through --full-refresh)") %}
        {% endif %}
        {% if cfg.incremental_strategy not in [none, 'merge'] %}
            {% do problems.append("no incremental_strategy, or 'merge' (it is '"
                ~ cfg.incremental_strategy ~ "': the kind merges on its unique key)") %}
        {% endif %}
        {% if problems %}
            {{ exceptions.raise_compiler_error(where ~ ": materialized='backfill_safe' needs "
                ~ problems | join(', ') ~ " (docs/guides/add-a-source-and-a-model.md)") }}
        {% endif %}
    {% elif calls_merge_source %}
        {% set problems = [] %}
        {% if cfg.materialized != 'incremental' %}
            {% do problems.append(
                "materialized='incremental' (it is '" ~ cfg.materialized ~ "')") %}
        {% endif %}
        {% if cfg.incremental_strategy != 'merge' %}
            {% do problems.append(
                "incremental_strategy='merge' (it is '" ~ cfg.incremental_strategy ~ "')") %}
        {% endif %}
        {% if cfg.unique_key is not string or not cfg.unique_key %}
            {% do problems.append("one unique_key column (it is " ~ cfg.unique_key ~ ")") %}
        {% endif %}
        {% if cfg.file_format != 'iceberg' %}
            {% do problems.append(
                "file_format='iceberg' (it is '" ~ cfg.file_format ~ "')") %}
        {% endif %}
        {#- a backfill's writes reach its branch only on a WAP-enabled table: without it they
            would land on main, unpublished and unisolated -#}
        {% if (cfg.tblproperties or {}).get('write.wap.enabled') | string | lower != 'true' %}
            {% do problems.append("tblproperties {'write.wap.enabled': 'true'} (backfills "
                ~ "write to a branch of the table; it is " ~ (cfg.tblproperties or {}).get(
                    'write.wap.enabled') ~ ")") %}
        {% endif %}
        {% if problems %}
            {{ exceptions.raise_compiler_error(where ~ ": its select ends with merge_source(), "
                ~ "the framework's incremental kind, which needs " ~ problems | join(', ')) }}
        {% endif %}
    {% elif (cfg.meta or {}).get('backfill_safe') is not none %}
        {{ exceptions.raise_compiler_error(where ~ ": it declares config.meta.backfill_safe, but "
            ~ "it is not materialized 'backfill_safe', so it is not of the framework's kind (a "
            ~ "plain dbt model): set materialized='backfill_safe', or drop the declaration "
            ~ "(docs/guides/add-a-source-and-a-model.md)") }}
    {% endif %}
{% endmacro %}
