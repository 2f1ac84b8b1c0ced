{#- The silent miss: keys whose current state is not the row the model holds and that the next
    incremental run will not pick up, because the change is late beyond the window (stored
    watermark minus the lookback). They need a restatement (`pipeline restate`, which reads the
    same rows from audit_unreflected_changes). A key is missed when it is live in the current
    state but absent from the model, deleted there but present in the model, or present with
    any column that differs (macro unreflected_changes). The arguments default to the model's
    declaration (config.meta.backfill_safe: current_state, lookback, event_date; its
    unique_key), so a declared model needs none. Fails with their count. In a backfill's gate,
    only the dates the backfill wrote are checked, less the ones a restatement held beyond their
    restatement window (backfill_gate_dates).
    Severity: a key this test lists is known and listed (audit_unreflected_changes, `pipeline
    status`): it awaits its restatement (the late-data policy's job), so outside a backfill's
    gate it warns, whatever severity the yml gives, and `dbt build` goes on to the models
    downstream with the day's other data (a failing test would skip them: the aggregates frozen
    while the restatement waited for them, issue 78). An error: inside a gate (the restated
    dates must hold no late key), and for a model over models (its current state reads its
    upstream's tables: no late input explains a difference). unexplained_rows says how. -#}
{% test no_unloaded_changes(model, expected_model=none, unique_key=none, domain=none,
                            date_column=none) %}
{%- set declared = backfill_safe.declared_model_of(model) if execute else none %}
{%- if execute and declared is none
    and (expected_model is none or unique_key is none or domain is none or date_column is none) %}
    {{ exceptions.raise_compiler_error(
        "no_unloaded_changes on " ~ model ~ ": the model declares no config.meta.backfill_safe, "
        ~ "so expected_model, unique_key, domain and date_column are all needed") }}
{%- endif %}
{%- set declared = declared or {} %}
{%- set over_models = declared.get('reads_models') %}
{{ config(**backfill_safe.unexplained_rows_config()) }}
select
    unreflected.*,
    {{ backfill_safe.unexplained_flag('true' if over_models else 'false') }}
from (
{%- if over_models %}
{{ backfill_safe.unreflected_changes_over_models(model, declared.current_state_relation,
    declared.unique_key, model.identifier, declared.event_date, declared.scope) }}
{%- else %}
{{ backfill_safe.unreflected_changes(
    model,
    expected_model or declared.get('current_state_relation'),
    unique_key or declared.get('unique_key', 'placeholder_key'),
    domain or declared.get('lookback'),
    model.identifier,
    date_column or declared.get('event_date', 'placeholder_date'),
) }}
{%- endif %}
) as unreflected
where {{ backfill_safe.backfill_gate_dates('unreflected.restate_date',
    windowed=not over_models) }}
{% endtest %}
