{#- The framework's reconciliation tests (no_unloaded_changes, reconcile_daily_totals) tell a
    known difference from an unexplained one. A row of theirs that a key late beyond its window
    explains (listed in audit_unreflected_changes, awaiting its restatement: the late-data
    policy's job) warns; a row nothing explains, or any row in a backfill's gate (the dates it
    restated must be exact), is an error. So `dbt build` does not skip the models downstream of a
    fact for a listed late row: they take the day's other data (issue 78: a late correction of
    one line froze every aggregate over the fact, and the restatement then failed its gate on
    them). Each row carries `_unexplained` (1 or 0); the config counts every row as a failure
    (dbt's fail_calc) and errors only when one is unexplained. A yml `severity: warn` keeps it a
    warning; a yml error_if of its own replaces this one. -#}
{% macro unexplained_rows_config() %}
    {{ return({'warn_if': '!= 0', 'error_if': '!= 0 and max(_unexplained) = 1'}) }}
{% endmacro %}


{#- The `_unexplained` column: 1 in a backfill's gate or where `unexplained` (a SQL boolean)
    holds, else 0. -#}
{% macro unexplained_flag(unexplained) %}
    {%- if backfill_safe.run_mode().window is not none
        or var('backfill_gate_windows', none) is not none -%}
    1 as _unexplained
    {%- else -%}
    case when {{ unexplained }} then 1 else 0 end as _unexplained
    {%- endif -%}
{% endmacro %}
