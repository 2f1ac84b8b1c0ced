"""The warehouse's listing of its tables and views (`pipeline.warehouse.relations`, read by the
main job's reset, `pipeline maintain` and the tests' restores) and its reset."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

from helpers import Warehouse
from pipeline.maintain import iceberg_tables
from pipeline.warehouse import SCHEMAS, Relation, relations, reset


def test_the_listing_tells_tables_from_views_and_reset_drops_both_with_the_tables_files(warehouse: Warehouse):
    spark = warehouse.spark
    spark.sql("create database if not exists scratch")
    spark.sql("create table scratch.listed_table (n int) using iceberg")
    spark.sql("insert into scratch.listed_table values (1)")
    spark.sql("create view scratch.listed_view as select n from scratch.listed_table")
    spark.sql("create or replace temporary view listed_temporary as select 1 as n")
    data_file = Path(urlparse(warehouse.rows("select file_path from scratch.listed_table.files")[0].file_path).path)
    assert data_file.exists()

    listed = set(relations(spark, ("scratch", "no_such_schema")))
    assert listed == {Relation("scratch", "listed_table", False), Relation("scratch", "listed_view", True)}
    # the same relations and kinds as the catalog's own listing (which loads every table it lists)
    assert listed == {Relation("scratch", t.name, t.tableType == "VIEW")
                      for t in spark.catalog.listTables("scratch") if not t.isTemporary}
    assert iceberg_tables(spark, ("scratch", "no_such_schema")) == ["scratch.listed_table"]

    seeds = {r for r in relations(spark) if r.schema == "reference"}
    assert seeds
    reset(spark, keep=tuple(s for s in SCHEMAS if s != "scratch"))
    assert relations(spark, ("scratch",)) == []
    assert not data_file.exists()  # purged: the table's data files went with it
    assert {r for r in relations(spark) if r.schema == "reference"} == seeds  # a kept schema
    assert spark.sql("select n from listed_temporary").collect()[0].n == 1  # the session's own view


def _executions(spark) -> list:
    """Every statement Spark ran in this session, dbt's included (its SQL status store)."""
    executions = spark._jsparkSession.sharedState().statusStore().executionsList()
    return [executions.apply(i) for i in range(executions.size())]


def test_column_names_come_from_dbts_listing_without_a_describe_and_equal_the_tables(examples_built):
    """backfill_safe.column_names, which the hooks and the kind ask about relations dbt listed at
    the start of the invocation: the names Spark gives each table and view of the build, in
    order, read from the listing's text, with no `describe` sent."""
    wh = examples_built.fresh()
    listed = list(relations(wh.spark, ("staging", "marts", "control", "audit")))
    assert {r.schema for r in listed} >= {"staging", "marts", "control", "audit"}
    assert any(r.is_view for r in listed) and any(not r.is_view for r in listed)
    selects = " union all ".join(
        f"select '{r.schema}.{r.name}' as relation, '{{{{ backfill_safe.column_names(api.Relation.create("
        f"schema='{r.schema}', identifier='{r.name}', type='{'view' if r.is_view else 'table'}')) | join(',') }}}}'"
        " as names" for r in listed)
    before = {e.executionId() for e in _executions(wh.spark)}
    shown = {row["relation"]: row["names"].split(",") for row in wh.dbt.show(selects)}
    assert shown == {f"{r.schema}.{r.name}": wh.spark.table(f"{r.schema}.{r.name}").columns for r in listed}
    assert [e.description() for e in _executions(wh.spark)
            if e.executionId() not in before and "DescribeTable" in e.physicalPlanDescription()] == []
