{#- Rule 1, as a predicate on a raw table of `domain` (its own `updated_at` and `_loaded_at`):
    the versions a daily run reads as its changes, or none when every row is in scope (a full
    build or full refresh, a backfill, no watermark yet).
    - `updated_at > <watermark - lookback>` (incremental_lower_bound): the trailing reprocess
      window; a version older than it is beyond the restatement window (no_unloaded_changes
      reports it).
    - and `_loaded_at > <last committed run's start - var landing_overlap_minutes>`: a version
      landed before the model's last committed run started was in that run's reach, and that
      run's window started no later than this one's, so it was loaded then. Without this, each
      run recomputed everything updated in the lookback, the previous days' changes already
      loaded (at 5M lines, 25,785 of the 31,719 orders of a daily run), a share that grows
      with the table. The margin covers a landing stamped before a run started but committed
      after it read (through a Thrift Server, where nothing serialises landing and runs), and
      the clocks of the dbt host and the Spark driver: 60 minutes, but 0 on the profile's
      `embedded` target (one clock, a lock), unless the var says otherwise. Left out while the pipeline has no
      recorded start (a watermark table from before it): the whole lookback is read. -#}
{% macro changed_versions_predicate(domain) %}
    {% if backfill_window() is not none %}
        {{ return(none) }}
    {% endif %}
    {% set lower_bound = incremental_lower_bound(domain) %}
    {% if lower_bound is none %}
        {{ return(none) }}
    {% endif %}
    {% set last_run_started_at = get_watermark(this.identifier, 'last_run_started_at') %}
    {% if last_run_started_at is none %}
        {{ return("updated_at > " ~ lower_bound) }}
    {% endif %}
    {% set overlap = var('landing_overlap_minutes', none) %}
    {% if overlap is none %}
        {#- the profile's embedded target: one clock, and the state folder's lock serialises
            landings and runs (dbt's `target` does not carry dbt-spark's connection method) -#}
        {% set overlap = 0 if target.name == 'embedded' else 60 %}
    {% endif %}
    {% if overlap is not integer or overlap < 0 %}
        {{ exceptions.raise_compiler_error(
            "var 'landing_overlap_minutes' must be a whole number of minutes >= 0; got: " ~ overlap) }}
    {% endif %}
    {% set landed_after = last_run_started_at - modules.datetime.timedelta(minutes=overlap) %}
    {{ return("updated_at > " ~ lower_bound
        ~ " and _loaded_at > " ~ timestamp_literal(landed_after)) }}
{% endmacro %}
