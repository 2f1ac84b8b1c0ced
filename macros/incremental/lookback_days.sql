{#- The trailing reprocess window, in days, of a domain: var `lookback_days` maps each domain
    to a whole number of days, e.g. {sales: 3}. A domain the var does not name is an error that
    names the model and the domains it does name (a typo must not silently get a default
    window); so is a value that is not a whole number of days >= 0. -#}
{% macro lookback_days(domain) %}
    {#- while dbt parses, a declared model's domain may not be known yet: checked when it runs -#}
    {% if not execute %}
        {{ return(0) }}
    {% endif %}
    {% set configured = var('lookback_days', {}) %}
    {% set where = "model " ~ (this if this is defined and this else model.unique_id) %}
    {% if configured is not mapping %}
        {{ exceptions.raise_compiler_error(where ~ ": var 'lookback_days' must map a domain to "
            ~ "days, e.g. {sales: 3}; got: " ~ configured) }}
    {% elif domain not in configured %}
        {{ exceptions.raise_compiler_error(where ~ ": lookback domain '" ~ domain ~ "' is not "
            ~ "in var 'lookback_days' (domains: " ~ (configured.keys() | list | sort | join(', ')
            or 'none') ~ "); add it to dbt_project.yml vars, e.g. lookback_days: {"
            ~ domain ~ ": 3}") }}
    {% elif configured[domain] is not integer or configured[domain] < 0 %}
        {{ exceptions.raise_compiler_error(where ~ ": var 'lookback_days' for domain '" ~ domain
            ~ "' must be a whole number of days >= 0; got: " ~ configured[domain]) }}
    {% else %}
        {{ return(configured[domain]) }}
    {% endif %}
    {#- reached only where raising does not stop rendering (sqlfluff's stub) -#}
    {{ return(0) }}
{% endmacro %}
