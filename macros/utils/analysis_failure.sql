{#- Why Spark cannot analyse or plan `sql` (a select), or none when it can: one `explain`,
    which returns such an error as its text instead of raising it. For a hook's work done while
    dbt compiles it: an error raised there stops dbt with "Exited because of keyboard interrupt"
    and ERROR=0 in its summary, where a failing statement the hook returns (failing_statement)
    is reported as the hook's error. -#}
{% macro analysis_failure(sql) %}
    {% set plan = run_query('explain ' ~ sql) %}
    {% set rows = plan.rows if plan is not none else [] %}
    {% set text = (rows[0][0] if rows | length > 0 else '') ~ '' %}
    {#- an error of planning other than analysis: 'Error occurred during query planning: ',
        then the error's lines, one a row -#}
    {% if text.startswith('Error occurred during query planning') %}
        {{ return(((rows[1][0] if rows | length > 1 else text) ~ '') | trim) }}
    {% endif %}
    {% set error = modules.re.search(
        '^== Physical Plan ==\\s*\\n\\s*[\\w.$]*(Exception|Error): ?(.*)', text) %}
    {{ return(error.group(2).split(';')[0] | trim if error is not none else none) }}
{% endmacro %}


{#- A statement that fails with `message` when dbt runs it: what a hook returns to be reported
    as failed, naming why (the run exits 1 and its summary counts the error). Eager: dbt-spark's
    session cursor only plans a select it is not asked to fetch, so a bare `select raise_error`
    would pass; `cache table` runs its select at once. Its temporary view of the previous
    failure is dropped first. -#}
{% macro failing_statement(message) %}
    {#- statements, not run_query: through a Thrift Server PyHive cannot fetch DDL's empty
        result -#}
    {% call statement('uncache_failed_hook') %}
        uncache table if exists backfill_safe_failed_hook
    {% endcall %}
    {% call statement('drop_failed_hook') %}
        drop view if exists backfill_safe_failed_hook
    {% endcall %}
    {{ return("cache table backfill_safe_failed_hook as select raise_error('"
              ~ message | replace('\\', '') | replace("'", '') | replace('\n', ' ') ~ "')") }}
{% endmacro %}
