{#- The trailing reprocess window, in days, of a model: its declared `lookback`, either a whole
    number of days (the model's own window) or the name of a domain that var `lookback_days`
    maps to days, e.g. {sales: 3} (one window shared by the models of a domain). A domain the
    var does not name is an error that names the model and the domains it does name (a typo
    must not silently get a default window); so is a value that is not a whole number of days
    >= 0. `model_name` names the model in those errors where no model is being rendered (the
    on-run-end hook). -#}
{% macro lookback_days(domain, model_name=none) %}
    {#- while dbt parses, a declared model's domain may not be known yet: checked when it runs -#}
    {% if not execute %}
        {{ return(0) }}
    {% endif %}
    {% set where = "model " ~ (model_name if model_name is not none
        else this if this is defined and this else model.unique_id) %}
    {% if domain is integer %}
        {% if domain < 0 %}
            {{ exceptions.raise_compiler_error(where ~ ": lookback must be a whole number of "
                ~ "days >= 0 or a domain of var 'lookback_days'; got: " ~ domain) }}
        {% endif %}
        {{ return(domain) }}
    {% endif %}
    {% set configured = var('lookback_days', {}) %}
    {% if configured is not mapping %}
        {{ exceptions.raise_compiler_error(where ~ ": var 'lookback_days' must map a domain to "
            ~ "days, e.g. {sales: 3}; got: " ~ configured) }}
    {% elif domain is not string or domain not in configured %}
        {{ exceptions.raise_compiler_error(where ~ ": lookback domain '" ~ domain ~ "' is not "
            ~ "in var 'lookback_days' (domains: " ~ (configured.keys() | list | sort | join(', ')
            or 'none') ~ "); add it to dbt_project.yml vars, e.g. lookback_days: {"
            ~ domain ~ ": 3}, or declare the model's own window in days (lookback: 3)") }}
    {% elif configured[domain] is not integer or configured[domain] < 0 %}
        {{ exceptions.raise_compiler_error(where ~ ": var 'lookback_days' for domain '" ~ domain
            ~ "' must be a whole number of days >= 0; got: " ~ configured[domain]) }}
    {% else %}
        {{ return(configured[domain]) }}
    {% endif %}
    {#- reached only where raising does not stop rendering (sqlfluff's stub) -#}
    {{ return(0) }}
{% endmacro %}
