{#- The event dates a backfill's gate leaves out of the framework's data tests
    (no_unloaded_changes, reconcile_daily_totals): var backfill_gate_excluded_dates, which the
    runner passes to a restatement's gate with the dates of the late rows the late-data policy
    held beyond their restatement window (not this restatement's to fix: pending sign-off).
    Returns a predicate on `column` (a date expression): true on every other date, and on a null
    one; 'true' when the var is unset. Each value must be a YYYY-MM-DD date. -#}
{% macro gate_excluded_dates(column) %}
    {%- set dates = var('backfill_gate_excluded_dates', none) -%}
    {%- if dates is none or dates | length == 0 -%}
        {{ return('true') }}
    {%- endif -%}
    {%- if dates is string or dates is mapping -%}
        {{ exceptions.raise_compiler_error("var backfill_gate_excluded_dates: a list of "
            ~ "YYYY-MM-DD dates; got " ~ dates) }}
    {%- endif -%}
    {%- set literals = [] -%}
    {%- for day in dates -%}
        {%- if not modules.re.fullmatch('[0-9]{4}-[0-9]{2}-[0-9]{2}', day ~ '') -%}
            {{ exceptions.raise_compiler_error("var backfill_gate_excluded_dates: '" ~ day
                ~ "' is not a YYYY-MM-DD date") }}
        {%- endif -%}
        {%- do literals.append("date'" ~ day ~ "'") -%}
    {%- endfor -%}
    {{ return("coalesce(" ~ column ~ " not in (" ~ literals | join(', ') ~ "), true)") }}
{% endmacro %}
