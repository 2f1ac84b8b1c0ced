{#- Rule 1: the lower bound of this run's scope on the update timestamp, as a SQL timestamp
    literal: the model's stored watermark minus the trailing lookback of its domain
    (var `lookback_days`, e.g. {sales: 3}). Returns none when every row is in scope: a full
    build or full refresh, or a table whose pipeline has no watermark yet.
    Models filter with `updated_at > lower_bound` on the current state of their inputs. -#}
{% macro incremental_lower_bound(domain) %}
    {% if not backfill_safe.is_incremental_run() %}
        {{ return(none) }}
    {% endif %}
    {% set watermark = backfill_safe.get_watermark(this.identifier) %}
    {% if watermark is none %}
        {{ return(none) }}
    {% endif %}
    {% set lookback = modules.datetime.timedelta(days=backfill_safe.lookback_days(domain)) %}
    {{ return(backfill_safe.timestamp_literal(watermark - lookback)) }}
{% endmacro %}
