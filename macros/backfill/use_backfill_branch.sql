{#- The write-audit-publish branch of a backfill, set on the connection that runs the node.

    The backfill runner passes var `backfill_branch` (its run id) to each window's `dbt run` and
    to the gate's `dbt test`. Set as a pre-hook of the incremental models and before every data
    test (spark__get_test_sql), `spark.wap.branch` routes their writes and reads of WAP-enabled
    tables to the branch on that very connection: the embedded session and a Spark Thrift
    Server (one session per connection) alike. Renders nothing without the var. -#}
{% macro use_backfill_branch() %}
    {%- set branch = var('backfill_branch', none) -%}
    {%- if branch -%}
        {%- if not modules.re.fullmatch('bf_[0-9]{8}_[0-9]{6}_[0-9a-f]{6}', branch | string) -%}
            {{ exceptions.raise_compiler_error(
                "var backfill_branch: not a backfill run id: '" ~ branch ~ "'") }}
        {%- endif -%}
        set spark.wap.branch = {{ branch }}
    {%- endif -%}
{% endmacro %}
