{#- The event dates a backfill's gate checks with the framework's data tests
    (no_unloaded_changes, reconcile_daily_totals): a predicate on `column` (a date expression).
    - var backfill_gate_windows, a list of [start, end) date pairs, which the runner passes to
      every gate with the run's windows: only dates inside one of them (a row without a date
      is in none). The rest of a table is main's, untouched by the backfill: changes landed
      there and not yet loaded are the daily run's to load, and late ones a restatement's, not
      this gate's to fail on. `windowed=false` (a model whose changes are models of the kind: it
      is restated by the keys its upstream recorded, on any date) leaves the windows out.
    - var backfill_gate_excluded_dates, the dates of the late rows a restatement held beyond
      their restatement window (pending sign-off): left out (a row without a date is kept).
    'true' when neither var is set. Each value must be a YYYY-MM-DD date. -#}
{% macro backfill_gate_dates(column, windowed=true) %}
    {%- set conditions = [] -%}
    {%- set windows = var('backfill_gate_windows', none) if windowed else none -%}
    {%- if windows is not none -%}
        {%- if windows is string or windows is mapping or windows | length == 0 -%}
            {{ exceptions.raise_compiler_error("var backfill_gate_windows: a list of [start, end] "
                ~ "pairs of YYYY-MM-DD dates; got " ~ windows) }}
        {%- endif -%}
        {%- set ranges = [] -%}
        {%- for window in windows -%}
            {%- if window is string or window is mapping or window | length != 2 -%}
                {{ exceptions.raise_compiler_error("var backfill_gate_windows: " ~ window
                    ~ " is not a [start, end] pair of YYYY-MM-DD dates") }}
            {%- endif -%}
            {%- set start = backfill_safe.gate_date_literal('backfill_gate_windows', window[0]) -%}
            {%- set end = backfill_safe.gate_date_literal('backfill_gate_windows', window[1]) -%}
            {%- do ranges.append("(" ~ column ~ " >= " ~ start
                ~ " and " ~ column ~ " < " ~ end ~ ")") -%}
        {%- endfor -%}
        {%- do conditions.append("coalesce(" ~ ranges | join(' or ') ~ ", false)") -%}
    {%- endif -%}
    {%- set dates = var('backfill_gate_excluded_dates', none) -%}
    {%- if dates is not none and dates | length > 0 -%}
        {%- if dates is string or dates is mapping -%}
            {{ exceptions.raise_compiler_error("var backfill_gate_excluded_dates: a list of "
                ~ "YYYY-MM-DD dates; got " ~ dates) }}
        {%- endif -%}
        {%- set literals = [] -%}
        {%- for day in dates -%}
            {%- do literals.append(
                backfill_safe.gate_date_literal('backfill_gate_excluded_dates', day)) -%}
        {%- endfor -%}
        {%- do conditions.append("coalesce(" ~ column ~ " not in ("
            ~ literals | join(', ') ~ "), true)") -%}
    {%- endif -%}
    {{ return(conditions | join(' and ') if conditions else 'true') }}
{% endmacro %}


{#- A date literal of a gate var's value, which must be a YYYY-MM-DD date (named in the error). -#}
{% macro gate_date_literal(var_name, day) %}
    {%- if not modules.re.fullmatch('[0-9]{4}-[0-9]{2}-[0-9]{2}', day ~ '') -%}
        {{ exceptions.raise_compiler_error("var " ~ var_name ~ ": '" ~ day
            ~ "' is not a YYYY-MM-DD date") }}
    {%- endif -%}
    {{ return("date'" ~ day ~ "'") }}
{% endmacro %}
