{#- Reconciliation per date (exact): row count and sum of `amount_column` in the model against
    the live rows (`not is_deleted`) of `expected_model`, the current state computed from staging
    with no incremental logic. Returns one row per date that differs, with both sides; rows
    without a date are one more group, compared like the others. -#}
{% test reconcile_daily_totals(model, expected_model, date_column, amount_column) %}

with

actual as (
    select
        {{ date_column }} as reconciled_date,
        count(*) as row_count,
        sum({{ amount_column }}) as amount
    from {{ model }}
    group by {{ date_column }}
),

expected as (
    select
        {{ date_column }} as reconciled_date,
        count(*) as row_count,
        sum({{ amount_column }}) as amount
    from {{ expected_model }}
    where not is_deleted
    group by {{ date_column }}
)

select
    coalesce(expected.reconciled_date, actual.reconciled_date) as reconciled_date,
    expected.row_count as expected_rows,
    actual.row_count as actual_rows,
    expected.amount as expected_amount,
    actual.amount as actual_amount
from expected
full outer join actual
    -- null-safe: rows without a date on both sides agree, as any other date
    on expected.reconciled_date <=> actual.reconciled_date
where not (
    coalesce(expected.row_count, 0) = coalesce(actual.row_count, 0)
    and coalesce(expected.amount, 0) = coalesce(actual.amount, 0)
)

{% endtest %}
