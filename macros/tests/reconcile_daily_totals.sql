{#- Reconciliation per date (exact): row count and the sum of each measure in the model
    against the live rows (`not is_deleted`) of its current state, computed with no incremental
    logic. Returns one row per date that differs, with both sides; rows without a date are one
    more group, compared like the others (a model declared with no event date: one group, the
    whole table). The arguments default to the model's declaration
    (config.meta.backfill_safe: current_state, event_date, measures); `amount_column` names one
    measure instead. In a backfill's gate, only the dates the backfill wrote are compared, less
    the ones a restatement held beyond their restatement window (backfill_gate_dates). -#}
{% test reconcile_daily_totals(model, expected_model=none, date_column=none, amount_column=none) %}
{%- set declared = (backfill_safe.declared_model_of(model) if execute else none) or {} %}
{%- set expected_model = expected_model or declared.get('current_state_relation') %}
{%- set date_column = date_column or declared.get('event_date') %}
{%- set measures = [amount_column] if amount_column else declared.get('measures', []) %}
{#- a declared model with no event date (a customer mart over a fact): its totals over the whole
    table, one group -#}
{%- set undated = execute and declared and not declared.get('event_date') and date_column is none %}
{%- if execute and (expected_model is none or (date_column is none and not undated)) %}
    {{ exceptions.raise_compiler_error(
        "reconcile_daily_totals on " ~ model ~ ": the model declares no config.meta.backfill_safe, "
        ~ "so expected_model and date_column are needed") }}
{%- endif %}
{{ config(**backfill_safe.unexplained_rows_config()) }}
{%- set over_models = declared.get('reads_models') %}

with

{%- if not over_models and declared.get('current_state_relation') %}
late_dates as (
    {#- the dates of the model's keys late beyond its window (no_unloaded_changes' rows): a
        difference on one of them awaits its restatement -#}
    select explode(array(late.restate_date, late.loaded_event_date)) as late_date
    from (
        {{ backfill_safe.unreflected_changes(model, declared.current_state_relation, declared.unique_key,
            declared.lookback, model.identifier, declared.event_date) }}
    ) as late
),
{%- endif %}

actual as (
    select
        {{ 'cast(null as date)' if undated else date_column }} as reconciled_date,
        {%- for measure in measures %}
        sum({{ measure }}) as {{ measure }},
        {%- endfor %}
        count(*) as row_count
    from {{ model }}
    {{ ('group by ' ~ date_column) if not undated }}
),

expected as (
    select
        {{ 'cast(null as date)' if undated else date_column }} as reconciled_date,
        {%- for measure in measures %}
        sum({{ measure }}) as {{ measure }},
        {%- endfor %}
        count(*) as row_count
    from {{ expected_model }}
    where not is_deleted
    {{ ('group by ' ~ date_column) if not undated }}
)

select
    coalesce(expected.reconciled_date, actual.reconciled_date) as reconciled_date,
    {%- for measure in measures %}
    expected.{{ measure }} as expected_{{ measure }},
    actual.{{ measure }} as actual_{{ measure }},
    {%- endfor %}
    expected.row_count as expected_rows,
    actual.row_count as actual_rows,
    {{ backfill_safe.unexplained_flag('true' if over_models or not declared.get('current_state_relation') else
        'coalesce(expected.reconciled_date, actual.reconciled_date) not in (select late_date from late_dates'
        ~ ' where late_date is not null)') }}
from expected
full outer join actual
    -- null-safe: rows without a date on both sides agree, as any other date
    on expected.reconciled_date <=> actual.reconciled_date
where
    {{ backfill_safe.backfill_gate_dates('coalesce(expected.reconciled_date, actual.reconciled_date)',
        windowed=not over_models) }}
    and not (
    coalesce(expected.row_count, 0) = coalesce(actual.row_count, 0)
    {%- for measure in measures %}
    and coalesce(expected.{{ measure }}, 0) = coalesce(actual.{{ measure }}, 0)
    {%- endfor %}
)

{% endtest %}
