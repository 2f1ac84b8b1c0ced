"""The warehouse's schemas, their tables and views, and emptying them (the main job and the tests
start from nothing)."""

from __future__ import annotations

from typing import NamedTuple

from pipeline.engine import Sql

SCHEMAS = ("raw", "reference", "staging", "marts", "audit", "control", "dual_run", "scratch")


class Relation(NamedTuple):
    schema: str
    name: str
    is_view: bool

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}"


def relations(spark: Sql, schemas: tuple[str, ...] = SCHEMAS) -> list[Relation]:
    """Every table and view of `schemas` that exist, temporary views left out, from `show
    tables` and `show views`: names only, the same statements on the embedded engine and through
    the Thrift Server. `spark.catalog.listTables` loads every table it lists (an Iceberg table:
    its metadata file), 1.0-1.2 s for the tests' warehouse of about 30 relations where these
    statements take 0.4 s, and more the more tables a warehouse holds."""
    present = {row[0] for row in spark.sql("show schemas").collect()}
    found = []
    for schema in schemas:
        if schema not in present:
            continue
        views = {row.viewName for row in spark.sql(f"show views in {schema}").collect() if not row.isTemporary}
        found += [
            Relation(schema, row.tableName, row.tableName in views)
            for row in spark.sql(f"show tables in {schema}").collect()
            if not row.isTemporary
        ]
    return found


def reset(spark: Sql, keep: tuple[str, ...] = ()) -> None:
    """Drop every table and view of the project's schemas (but those in `keep`), Iceberg data
    files included."""
    for relation in relations(spark, tuple(s for s in SCHEMAS if s not in keep)):
        if relation.is_view:
            spark.sql(f"drop view if exists {relation}")
        else:
            spark.sql(f"drop table if exists {relation} purge")
