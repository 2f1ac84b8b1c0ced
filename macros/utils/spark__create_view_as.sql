{#- A view is created again only when its definition changed. dbt-spark's create_view_as (kept
    as it is otherwise: column comments, comment, contract) replaced every view on every run,
    and Spark resolved every table an unchanged view reads again (docs/benchmarks/history.md).
    The view carries the md5 of its whole `create` statement as the table property
    `backfill_safe.view_md5`. When the relation dbt listed at the start of the run is a view
    whose properties hold the md5 of the statement compiled now, the statement is not run (the
    main statement becomes a select that reads nothing); otherwise the view is replaced, with the
    new md5. The statement holds the compiled SQL, so a change of the model, a macro or a var it
    renders replaces the view. `--full-refresh` (or config full_refresh) always replaces it: what
    the md5 cannot see is a change of a table the view reads (Spark keeps a view's columns as
    they were when it was created), and a full refresh is how a table's schema changes here.
    A view is replaced by dropping it and creating it again, never by `create or replace view`:
    with Iceberg's SparkSessionCatalog on a Hive metastore, a replace writes the new version to
    the view's Iceberg metadata but leaves the SQL text in the metastore, and Spark reads a view
    through the metastore: every session, new ones too, kept reading the old SQL (apache/iceberg
    PR 15490). The new definition is analysed before the drop (a broken one keeps the old view);
    between the drop and the create the view does not exist: a reader at that moment fails, none
    reads the old definition after it. -#}
{% macro spark__create_view_as(relation, sql) -%}
    {%- set statement -%}
  create view {{ relation }}
  {% if config.persist_column_docs() -%}
    {% set model_columns = model.columns %}
    {% set query_columns = get_columns_in_query(sql) %}
    (
    {{ get_persist_docs_column_list(model_columns, query_columns) }}
    )
  {% endif %}
  {{ comment_clause() }}
  {%- set contract_config = config.get('contract') -%}
  {%- if contract_config.enforced -%}
    {{ get_assert_columns_equivalent(sql) }}
  {%- endif %}
    {%- endset -%}
    {%- set fingerprint = local_md5(statement ~ ' as ' ~ sql) -%}
    {%- if backfill_safe.view_is_current(relation, fingerprint) -%}
        select '{{ relation }}' as view_unchanged
    {%- else -%}
        {%- do backfill_safe.drop_view_to_replace(relation, sql) -%}
        {{ statement }}
  tblproperties ('backfill_safe.view_md5' = '{{ fingerprint }}')
  as
    {{ sql }}
    {%- endif -%}
{%- endmacro %}

{#- True when `relation`, as dbt listed it at the start of the run, is a view created by the
    statement whose md5 is `fingerprint` (spark__create_view_as), and no full refresh was asked
    for. Reads dbt's relation cache (Spark's `show table extended` text): no query. -#}
{% macro view_is_current(relation, fingerprint) %}
    {% if not execute or model.resource_type != 'model' or should_full_refresh() %}
        {{ return(false) }}
    {% endif %}
    {% set existing = adapter.get_relation(
        database=relation.database, schema=relation.schema, identifier=relation.identifier) %}
    {% if existing is none or not existing.is_view %}
        {{ return(false) }}
    {% endif %}
    {% set found = modules.re.search(
        'backfill_safe[.]view_md5=([0-9a-f]{32})', existing.information or '') %}
    {{ return(found is not none and found.group(1) == fingerprint) }}
{% endmacro %}

{#- Drops `relation` (a view) before it is created again from `sql` (see spark__create_view_as:
    a `create or replace view` leaves readers on the old SQL). `sql` is analysed first (a select
    that reads no row): a definition that does not compile fails here and the view it would
    replace is kept. Dropped through the adapter, so dbt's relation cache forgets it too. -#}
{% macro drop_view_to_replace(relation, sql) %}
    {% if execute %}
        {% do get_columns_in_query(sql) %}
        {% do adapter.drop_relation(api.Relation.create(database=relation.database,
            schema=relation.schema, identifier=relation.identifier, type='view')) %}
    {% endif %}
{% endmacro %}
