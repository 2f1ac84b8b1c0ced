{#- The MERGE source of a framework model (unless its meta says `stage_merge_source: false`):
    the rows to merge (`rows`, the select kind_rows gives) written once to a Parquet table in
    schema `scratch` (staged_merge_source_relation), which the schema check describes and the
    MERGE reads. Without it the MERGE reads dbt-spark's temporary view, i.e. evaluates the
    model's whole select once per pass of Iceberg's copy-on-write MERGE and once per reference
    to the scope inside it; Spark's cache is not read inside Iceberg's rewritten MERGE plan.
    Written from the select itself, not from a temporary view of it: the view's creation
    analysed the select once more, for nothing (figures: docs/benchmarks/history.md).
    Parquet, not Iceberg: the table is scratch, never branched, never versioned.
    Returns the staged table's relation, or none when the model does not ask for it. -#}
{% macro stage_merge_source(rows) %}
    {% if not backfill_safe.run_plan().stage_merge_source %}
        {{ return(none) }}
    {% endif %}
    {% set staged = backfill_safe.staged_merge_source_relation() %}
    {#- no table of this name exists before: it is this invocation's, dropped after the MERGE -#}
    {% do backfill_safe.ensure_scratch_schema() %}
    {% call statement('stage_merge_source', fetch_result=false) %}
        create table {{ staged }} using parquet as {{ rows }}
    {% endcall %}
    {{ return(api.Relation.create(schema=staged.split('.')[0], identifier=staged.split('.')[1],
                                  type='table')) }}
{% endmacro %}

{#- The schema of the staged MERGE sources (stage_merge_source), made once per dbt invocation
    (the on-run-start hook makes it when the invocation runs a model of the kind). A statement,
    not run_query: DDL returns no rows, which run_query fails on through Thrift. -#}
{% macro ensure_scratch_schema() %}
    {% set made = backfill_safe.invocation_store('scratch_schema') %}
    {% if not made %}
        {% call statement('create_scratch_schema', fetch_result=false) %}
            create schema if not exists scratch
        {% endcall %}
        {% do made.update({'made': true}) %}
    {% endif %}
{% endmacro %}

{#- The staged MERGE source of this model in this dbt invocation: one per model and invocation,
    so two runs through one Thrift Server never share it. -#}
{% macro staged_merge_source_relation() %}
    {% set run = (invocation_id | replace('-', ''))[:12] %}
    {{ return('scratch.' ~ backfill_safe.validated_identifier(this.identifier)
        ~ '__merge_source_' ~ run) }}
{% endmacro %}

{#- Called by the materialization once the MERGE committed: drops this invocation's staged
    source (stage_merge_source). Renders nothing on a full build. -#}
{% macro drop_staged_merge_source() %}
    {% set plan = backfill_safe.run_plan() %}
    {% if not plan.incremental or plan.declared is none or not plan.stage_merge_source %}
        {{ return('') }}
    {% endif %}
    drop table if exists {{ backfill_safe.staged_merge_source_relation() }}
{% endmacro %}
