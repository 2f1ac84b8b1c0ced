{#- dbt's test query, read on the backfill's branch during the runner's gate.

    Overrides the adapter's `get_test_sql` only to run `use_backfill_branch()` on the test's own
    connection first (dbt has no pre-hooks for tests); the query is dbt's default. A statement
    without a fetch: through a Thrift Server PyHive cannot fetch some empty results. -#}
{% macro spark__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) -%}
    {%- set branch_sql = backfill_safe.use_backfill_branch() -%}
    {%- if execute and branch_sql | trim -%}
        {%- call statement('use_backfill_branch', auto_begin=false) -%}
            {{ branch_sql }}
        {%- endcall -%}
    {%- endif -%}
    {{ default__get_test_sql(main_sql, fail_calc, warn_if, error_if, limit) }}
{%- endmacro %}
