{#- Rule 1: the lower bound of this run's scope on the update timestamp, as a SQL timestamp
    literal: the model's stored watermark minus the trailing lookback of `domain` (its own days,
    or a domain of var `lookback_days`, e.g. {sales: 3}). Returns none when every row is in
    scope: a full build or full refresh, or a table whose pipeline has no watermark yet. A model
    of the kind reads it from its run plan (run_plan.lower_bound, its declared lookback). -#}
{% macro incremental_lower_bound(domain) %}
    {% set plan = backfill_safe.run_plan() %}
    {% if plan.declared is not none and domain == plan.declared.lookback %}
        {{ return(plan.lower_bound) }}
    {% endif %}
    {% if plan.watermark is none %}
        {{ return(none) }}
    {% endif %}
    {{ return(backfill_safe.watermark_less_lookback(plan.watermark,
        backfill_safe.lookback_days(domain))) }}
{% endmacro %}

{#- The rule itself: `watermark` (a datetime) less `days` whole days, as a SQL timestamp
    literal. -#}
{% macro watermark_less_lookback(watermark, days) %}
    {{ return(backfill_safe.timestamp_literal(
        watermark - modules.datetime.timedelta(days=days))) }}
{% endmacro %}
