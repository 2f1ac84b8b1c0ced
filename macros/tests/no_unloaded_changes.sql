{#- The silent miss: keys whose current state (`expected_model`) is not the row the model holds
    and that the next incremental run will not pick up, because the change is late beyond the
    window (stored watermark minus the domain's lookback). They need a restatement
    (`pipeline restate`, which reads the same rows from audit_unreflected_changes). A key is
    missed when it is live in `expected_model` but absent from the model, deleted there but
    present in the model, or present with any column that differs (macro unreflected_changes).
    `date_column` is the model's event date (its partition column): the date to restate.
    Fails with their count. -#}
{% test no_unloaded_changes(model, expected_model, unique_key, domain, date_column) %}
{{ unreflected_changes(model, expected_model, unique_key, domain, model.identifier, date_column) }}
{% endtest %}
