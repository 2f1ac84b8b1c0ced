{#- Volume alert on a fact's rows per event date: each of the last `recent_days` dates (ending
    at the latest date in the model) is compared with the median of the `trailing_days` dates
    before it (volume_band_figures: a calendar spine, so a missing day is a drop; the column
    keeps the name trailing_mean); a date outside median x (1 - band) .. median x (1 + band)
    fails (or warns: the test's severity, var volume_alert_severity). Quiet until
    `min_history_days` dates of history exist and while the trailing median is below
    `min_trailing_mean` rows a day (too little to judge): `pipeline status` names a test that
    these guards keep quiet at its table's volume. -#}
{% test volume_within_band(model, date_column, trailing_days=14, band=0.5, min_history_days=7,
                           recent_days=1, min_trailing_mean=10) %}

select
    day,
    row_count,
    trailing_mean,
    case
        when row_count > trailing_mean then 'spike' else 'drop'
    end as alert
from (
    {{ backfill_safe.volume_band_figures(model, date_column, trailing_days, recent_days) }}
) as figures
where
    trailing_days >= {{ min_history_days | int }}
    and trailing_mean >= {{ min_trailing_mean }}
    and (
        row_count < trailing_mean * (1 - {{ band }})
        or row_count > trailing_mean * (1 + {{ band }})
    )

{% endtest %}
