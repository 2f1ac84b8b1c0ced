{#- Rule 1, as a predicate on a raw table read by a model (`plan`, its run_plan; the table's
    own update time, column `update_column`, and `_loaded_at`):
    the versions a daily run reads as its changes, or none when every row is in scope (a full
    build or full refresh, a backfill, no watermark yet).
    - `updated_at > <watermark - lookback>` (the plan's lower_bound): the trailing reprocess
      window; a version older than it is beyond the restatement window (no_unloaded_changes
      reports it).
    - and `_loaded_at > <landing bound>` (the plan's landed_bound_at: the model's last committed
      run's start, less a margin): a version landed before it was in that run's reach, and that
      run's window started no later than this one's, so it was loaded then. Without this, each
      run recomputed everything updated in the lookback, the previous days' changes already
      loaded, a share that grows with the table (docs/benchmarks/history.md). Left out while the pipeline has no recorded start. -#}
{% macro changed_versions_predicate(plan, update_column='updated_at') %}
    {% if plan.window is not none or plan.lower_bound is none %}
        {{ return(none) }}
    {% endif %}
    {% if plan.landed_bound_at is none %}
        {{ return(update_column ~ " > " ~ plan.lower_bound) }}
    {% endif %}
    {{ return(update_column ~ " > " ~ plan.lower_bound ~ " and _loaded_at > "
        ~ backfill_safe.timestamp_literal(plan.landed_bound_at)) }}
{% endmacro %}
