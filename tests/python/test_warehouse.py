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
