"""The warehouse's schemas, and emptying them (the main job and the tests start from nothing)."""

from __future__ import annotations

from pipeline.engine import Sql

SCHEMAS = ("raw", "reference", "staging", "marts", "audit", "control", "dual_run", "scratch")


def reset(spark: Sql, keep: tuple[str, ...] = ()) -> None:
    """Drop every table and view of the project's schemas (but those in `keep`), Iceberg data
    files included."""
    for schema in SCHEMAS:
        if schema in keep or not spark.catalog.databaseExists(schema):
            continue
        for table in spark.catalog.listTables(schema):
            if table.isTemporary:
                continue
            kind = "view" if table.tableType == "VIEW" else "table"
            purge = " purge" if kind == "table" else ""
            spark.sql(f"drop {kind} if exists {schema}.{table.name}{purge}")
