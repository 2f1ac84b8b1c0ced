{#- The trailing reprocess window, in days, of a domain: var `lookback_days` is a mapping of
    domain to a whole number of days (default 3 for a domain it does not name). -#}
{% macro lookback_days(domain) %}
    {% set configured = var('lookback_days', {}) %}
    {% if configured is not mapping %}
        {{ exceptions.raise_compiler_error(
            "var 'lookback_days' must map a domain to days, e.g. {sales: 3}; got: " ~ configured) }}
    {% endif %}
    {% set days = configured.get(domain, 3) if configured is mapping else none %}
    {% if days is not integer or days < 0 %}
        {{ exceptions.raise_compiler_error(
            "var 'lookback_days' for domain '" ~ domain ~ "' must be a whole number of days >= 0; got: "
            ~ days) }}
    {% endif %}
    {{ return(days) }}
{% endmacro %}
