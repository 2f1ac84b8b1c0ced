{#- The framework's kind: an incremental model whose select ends with merge_source(). dbt records
    that call in the node's depends_on.macros when it parses the model, so the kind is known for
    every node of the graph before anything runs, and it is declared in one place: the select.
    Only such a model gets guarded_merge_sql, the watermark, the staged MERGE source and the run
    records; every other model keeps dbt-spark's behaviour (merge, append, insert_overwrite,
    microbatch), whatever folder config it shares with them. `node`: a node of the graph, or
    the model being run (default). -#}
{% macro is_framework_model(node=none) %}
    {% set node = model if node is none else node %}
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
    {% if backfill_safe.is_framework_model(node) %}
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
            ~ "its select does not end with merge_source(), so it is not of the framework's "
            ~ "incremental kind (a plain dbt model): end its select with merge_source(), or "
            ~ "drop the declaration") }}
    {% endif %}
{% endmacro %}
