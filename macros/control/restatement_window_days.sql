{#- The restatement window of a declared model in whole days: how far back from its watermark's
    date a row late beyond its lookback is still restated by `pipeline restate` (the scheduled
    deep restatement) without anyone's sign-off. A late row whose event dates are all older is
    held: listed by the audit (beyond_restatement_window) and restated only once signed off
    (`pipeline signoff`).
    From, in order: the model's own config.meta.backfill_safe.restatement_window (whole days, or
    a key of var restatement_window_days); var restatement_window_days, whole days for every
    model or a mapping of lookback domain (or `default`) to days, the model's lookback domain's
    entry else `default`; else 90. A window shorter than the model's lookback, a value that is
    not whole days, a key the var does not name, or var restatement_horizon_days (its former
    name) is a compiler error naming `where`. `lookback`: the declared lookback (none for a
    model over models), checked already (lookback_declaration); `model_name`: the model's. -#}
{% macro restatement_window_days(where, own, lookback, model_name) %}
    {% if var('restatement_horizon_days', none) is not none %}
        {{ exceptions.raise_compiler_error("var 'restatement_horizon_days' is now "
            ~ "'restatement_window_days' (whole days, or a mapping of lookback domain to days, "
            ~ "e.g. {default: 90, sales: 180}): rename it in dbt_project.yml") }}
    {% endif %}
    {% set configured = var('restatement_window_days', 90) %}
    {% if configured is not integer and configured is not mapping %}
        {{ exceptions.raise_compiler_error(where ~ ": var 'restatement_window_days' must be "
            ~ "whole days or a mapping of lookback domain to days, e.g. {default: 90, sales: "
            ~ "180}; got: " ~ configured) }}
    {% endif %}
    {% set domains = configured if configured is mapping else {} %}
    {% if own is not none %}
        {% set source = "restatement_window" %}
        {% if own is string %}
            {% if own not in domains %}
                {{ exceptions.raise_compiler_error(where ~ ": restatement_window '" ~ own
                    ~ "' is not in var 'restatement_window_days' (keys: " ~ (domains.keys()
                    | list | sort | join(', ') or 'none') ~ "); name one, or give whole days") }}
            {% endif %}
            {% set source = "var 'restatement_window_days' '" ~ own ~ "'" %}
            {% set days = domains[own] %}
        {% else %}
            {% set days = own %}
        {% endif %}
    {% elif configured is integer %}
        {% set source, days = "var 'restatement_window_days'", configured %}
    {% elif lookback is string and lookback in domains %}
        {% set source = "var 'restatement_window_days' '" ~ lookback ~ "'" %}
        {% set days = domains[lookback] %}
    {% else %}
        {% set source = "var 'restatement_window_days' 'default'" %}
        {% set days = domains.get('default', 90) %}
    {% endif %}
    {% if days is not integer or days is sameas true or days is sameas false or days < 0 %}
        {{ exceptions.raise_compiler_error(where ~ ": " ~ source ~ ": the restatement window "
            ~ "must be whole days >= 0; got: " ~ days) }}
    {% endif %}
    {% set lookback_days = backfill_safe.lookback_days(lookback, model_name)
        if lookback is not none else 0 %}
    {% if days < lookback_days %}
        {{ exceptions.raise_compiler_error(where ~ ": " ~ source ~ ": the restatement window ("
            ~ days ~ " days) is shorter than the lookback (" ~ lookback_days ~ " days), which "
            ~ "the daily run already reloads") }}
    {% endif %}
    {{ return(days) }}
{% endmacro %}
