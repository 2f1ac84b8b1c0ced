{#- A filter for a model's select: the rows whose `key` has a version of landed source
    `source_name`.`table` landed since the model's last committed run (its landing bound,
    incremental_landed_bound), as `key in (select key from <source> where _loaded_at > ...)`.
    Every other key's versions were in that run's reach. `false` when no version landed since
    (one pruned probe: the select then reads none); `true` when every row is in scope (a full
    build, a backfill, a dual run, a run with no recorded start). For a select that reads a
    landed source's current versions but is keyed by something else (a reference table of the
    codes those versions name: the shop's dim_channel): the key's predicate goes through the
    staging's window, which is partitioned by it, so only those keys' versions are read.
    `key` must be a column of the source's landing contract. -#}
{% macro landed_since_last_run(source_name, table, key) %}
    {% set relation = source(source_name, table) %}
    {% if not execute %}
        {{ return('true') }}
    {% endif %}
    {% set contract = backfill_safe.landing_contract(source_name, table) %}
    {% if key not in contract.columns %}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ ": landed_since_last_run('"
            ~ source_name ~ "', '" ~ table ~ "', key='" ~ key ~ "'): '" ~ key ~ "' is not a column "
            ~ "of the source (" ~ contract.columns | join(', ') ~ ")") }}
    {% endif %}
    {% set bound = backfill_safe.incremental_landed_bound()
        if var('dual_run_model', none) is none else none %}
    {% if bound is none %}
        {{ return('true') }}
    {% endif %}
    {% set landed = "select " ~ key ~ " from " ~ relation ~ " where _loaded_at > " ~ bound %}
    {#- memoized: the same answer wherever the run asks -#}
    {% if backfill_safe.memoized_rows("select count(*) from (" ~ landed
            ~ " limit 1) as landed")[0][0] == 0 %}
        {{ return('false') }}
    {% endif %}
    {{ return(key ~ " in (" ~ landed ~ ")") }}
{% endmacro %}
