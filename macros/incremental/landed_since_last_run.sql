{#- A filter for a model's select: the rows whose `key` has a version of landed source
    `source_name`.`table` landed since the model's last committed run (its landing bound,
    incremental_landed_bound), as `key in (select landed.key from <source> as landed where
    landed._loaded_at > ...)`.
    Every other key's versions were in that run's reach. `false` when no version landed since
    (one pruned probe: the select then reads none); `true` when every row is in scope (a full
    build, a backfill, a dual run, a run with no recorded start). For a select that reads a
    landed source's current versions but is keyed by something else (a reference table of the
    codes those versions name: the shop's dim_channel): the key's predicate goes through the
    staging's window, which is partitioned by it, so only those keys' versions are read.
    `key` must be a column of the source's landing contract. With `new_values_of` (a column of
    the source and of this model's table): only the versions whose value of that column the
    table does not hold yet (compared as landed: a value written otherwise, ' Kiosk ' for
    kiosk, is read and found held). For a reference table, which never drops a row: a version
    naming a value it holds adds nothing, so on most days the filter is `false` and the select
    reads no version at all. -#}
{% macro landed_since_last_run(source_name, table, key, new_values_of=none) %}
    {% set relation = source(source_name, table) %}
    {% if not execute %}
        {{ return('true') }}
    {% endif %}
    {% set contract = backfill_safe.landing_contract(source_name, table) %}
    {% for argument, column in [('key', key), ('new_values_of', new_values_of)]
        if column is not none and column not in contract.columns %}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ ": landed_since_last_run('"
            ~ source_name ~ "', '" ~ table ~ "', " ~ argument ~ "='" ~ column ~ "'): '" ~ column
            ~ "' is not a column of the source (" ~ contract.columns | join(', ') ~ ")") }}
    {% endfor %}
    {% if new_values_of is not none and new_values_of not in model.columns %}
        {{ exceptions.raise_compiler_error("model " ~ model.name ~ ": landed_since_last_run('"
            ~ source_name ~ "', '" ~ table ~ "', new_values_of='" ~ new_values_of ~ "'): '"
            ~ new_values_of ~ "' is not among the model's documented columns "
            ~ model.columns.keys() | list) }}
    {% endif %}
    {% set bound = backfill_safe.incremental_landed_bound()
        if backfill_safe.run_plan().dual_run_model is none else none %}
    {% if bound is none %}
        {{ return('true') }}
    {% endif %}
    {#- the model's run is idle (nothing landed in its inputs since, or for a model over models,
        nothing changed upstream): its select is not run, so no probe of this source either (the
        answer is memoized, and the materialization asks it before anything else of the run) -#}
    {% if backfill_safe.nothing_landed_since_last_run() %}
        {{ return('false') }}
    {% endif %}
    {% set landed = "select landed." ~ key ~ " from " ~ relation ~ " as landed where"
        ~ " landed._loaded_at > " ~ bound %}
    {% if new_values_of is not none %}
        {#- not exists, not `not in`: a null in the table must not empty the result -#}
        {% set landed = landed ~ " and not exists (select 1 from " ~ this ~ " as held where held."
            ~ new_values_of ~ " = landed." ~ new_values_of ~ ")" %}
    {% endif %}
    {#- memoized: the same answer wherever the run asks -#}
    {% if backfill_safe.memoized_rows("select count(*) from (" ~ landed
            ~ " limit 1) as landed")[0][0] == 0 %}
        {{ return('false') }}
    {% endif %}
    {{ return(key ~ " in (" ~ landed ~ ")") }}
{% endmacro %}
