{#- The silent miss: keys whose current source state changed at or before the model's current
    window start (stored watermark minus the domain's lookback) and yet is not reflected in the
    model. The next incremental run will not pick those up: they need a restatement
    (`pipeline restate`, which reads the same rows from audit_unreflected_changes). A key is
    missed when it is live in `expected_model` but absent from the model, deleted there but
    present in the model, or present with an older `updated_at`. Fails with their count. -#}
{% test no_unloaded_changes(model, expected_model, unique_key, domain) %}
{{ unreflected_changes(model, expected_model, unique_key, domain, model.identifier) }}
{% endtest %}
