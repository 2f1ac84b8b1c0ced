{#- The framework's kind: a model materialized `backfill_safe` (the materialization
    materialization_backfill_safe_spark), known for every node of the graph before anything
    runs. Only such a model gets guarded_merge_sql, the watermark, the staged MERGE source and
    the run records; every other model keeps dbt-spark's behaviour (merge, append,
    insert_overwrite, microbatch), whatever folder config it shares with them. `node`: a node
    of the graph, or the model being run (default). -#}
{% macro is_framework_model(node=none) %}
    {% set node = model if node is none else node %}
    {{ return(node is not none and node.config is defined
        and node.config.materialized == 'backfill_safe') }}
{% endmacro %}


{#- A model that declares part of the kind is refused before it runs, naming what is missing
    and the guide: materialized 'backfill_safe' needs one unique_key, the iceberg file format,
    the merge strategy (or none) and on_schema_change ignore or fail; a select that ends with
    merge_source() is the old way of the kind (old_way_message); config.meta.backfill_safe
    (the kind's declaration) needs the kind. `node`: a model node; returns nothing, raises a
    compiler error. -#}
{% macro check_framework_declaration(node) %}
    {% set where = "model " ~ node.name ~ " (" ~ node.original_file_path ~ ")" %}
    {% set cfg = node.config %}
    {% for macro_id in node.depends_on.macros if macro_id.split('.')[-1] == 'merge_source' %}
        {{ exceptions.raise_compiler_error(backfill_safe.old_way_message(node)) }}
    {% endfor %}
    {% if cfg.materialized == 'backfill_safe' %}
        {% set problems = [] %}
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
    {% elif (cfg.meta or {}).get('backfill_safe') is not none %}
        {{ exceptions.raise_compiler_error(where ~ ": it declares config.meta.backfill_safe, but "
            ~ "it is not materialized 'backfill_safe', so it is not of the framework's kind (a "
            ~ "plain dbt model): set materialized='backfill_safe', or drop the declaration "
            ~ "(docs/guides/add-a-source-and-a-model.md)") }}
    {% endif %}
{% endmacro %}
