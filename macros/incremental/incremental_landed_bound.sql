{#- The landing bound of a daily run, as a SQL timestamp literal: when the model's last committed
    run started (control.etl_watermark.last_run_started_at, advance_watermark), less var
    `landing_overlap_minutes`. Every version landed before it was in that run's reach, so only
    versions landed after it can be news. The margin covers a landing stamped before a run
    started but committed after it read (through a Thrift Server, where nothing serialises
    landing and runs), and the clocks of the dbt host and the Spark driver: 60 minutes, but 0
    on the profile's `embedded` target (one clock, a lock), unless the var says otherwise.
    None when every row is in scope (full build, full refresh, backfill) or the pipeline has no
    recorded start (a watermark table from before the column: its next run reads the whole
    lookback, then records its start). -#}
{% macro incremental_landed_bound() %}
    {% set bound = backfill_safe.incremental_landed_bound_at() %}
    {{ return(none if bound is none else backfill_safe.timestamp_literal(bound)) }}
{% endmacro %}

{#- The same bound as a datetime (none likewise): this model's from its run plan
    (run_plan.landed_bound_at), or, given `identifier`, the bound of that table's pipeline,
    from its last recorded start alone (its own run's kind is not asked). -#}
{% macro incremental_landed_bound_at(identifier=none) %}
    {% if identifier is none %}
        {{ return(backfill_safe.run_plan().landed_bound_at) }}
    {% endif %}
    {% set last_run_started_at = backfill_safe.get_watermark(identifier, 'last_run_started_at') %}
    {% if last_run_started_at is none %}
        {{ return(none) }}
    {% endif %}
    {% set margin = modules.datetime.timedelta(minutes=backfill_safe.landing_overlap_minutes()) %}
    {{ return(last_run_started_at - margin) }}
{% endmacro %}

{#- The margin of the landing bound, in minutes: var `landing_overlap_minutes`, else 0 on the
    profile's `embedded` target (one clock, and the state folder's lock serialises landings and
    runs; dbt's `target` does not carry dbt-spark's connection method) and 60 elsewhere. -#}
{% macro landing_overlap_minutes() %}
    {% set overlap = var('landing_overlap_minutes', none) %}
    {% if overlap is none %}
        {% set overlap = 0 if target.name == 'embedded' else 60 %}
    {% endif %}
    {% if overlap is not integer or overlap < 0 %}
        {{ exceptions.raise_compiler_error(
            "var 'landing_overlap_minutes' must be a whole number of minutes >= 0; got: " ~ overlap) }}
    {% endif %}
    {{ return(overlap) }}
{% endmacro %}
