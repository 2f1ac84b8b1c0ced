"""Reading what a run did from Iceberg metadata: snapshots, their summaries, the changelog."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.engine import Sql

TABLE_NAME = re.compile(  # a table name that may reach SQL
    r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*")


def checked_table(table: str) -> str:
    """`table` if it is a plain schema.table name (it reaches SQL), else ValueError."""
    if not TABLE_NAME.fullmatch(table):
        raise ValueError(f"not a schema.table name: {table!r}")
    return table


def table_exists(spark: Sql, table: str) -> bool:
    return spark.catalog.tableExists(checked_table(table))


def refreshed(spark: Sql, table: str) -> str:
    """`table`, after dropping this session's cached metadata of it.

    On a Spark Thrift Server every connection is a session with its own Iceberg table cache, and
    other sessions (dbt's MERGEs, a daily run) commit to the tables the runner inspects: without
    a refresh a session reads a snapshot up to 30 s old (unless the server disables the cache,
    as `pipeline.cluster` does). Cheap on the embedded session, where it changes nothing."""
    spark.sql(f"refresh table {checked_table(table)}")
    return table


def partition_fields(spark: Sql, table: str) -> list[str]:
    """The names of a table's partition fields (from its `partitions` metadata table's `partition`
    struct); [] for an unpartitioned table. `describe` works on both engines."""
    for row in spark.sql(f"describe table {checked_table(table)}.partitions").collect():
        if row[0] == "partition":
            return re.findall(r"([A-Za-z_][A-Za-z0-9_]*):", row[1])
    return []


def branch_head(spark: Sql, table: str, branch: str) -> int | None:
    """The snapshot a branch of a table points at; None if the branch (or table) does not exist."""
    if not table_exists(spark, table):
        return None
    rows = spark.sql(f"select snapshot_id from {refreshed(spark, table)}.refs where name = :b and type = 'BRANCH'",
                     args={"b": branch}).collect()
    return rows[0][0] if rows else None


def current_snapshot_id(spark: Sql, table: str) -> int | None:
    """Main's snapshot: what every reader without a branch or WAP setting sees."""
    return branch_head(spark, table, "main")


def operations_since(spark: Sql, table: str, snapshot_id: int | None) -> list[str] | None:
    """The operations of main's commits after `snapshot_id` (newest first): [] if main is still
    there, None if `snapshot_id` is not an ancestor of main (main was reset past it, or it expired).
    A `replace` is a compaction (rewrite_data_files): same rows, other files."""
    table = refreshed(spark, table)
    by_id = {row.snapshot_id: row for row in spark.sql(f"select snapshot_id, parent_id, operation from {table}.snapshots").collect()}
    cursor, operations = current_snapshot_id(spark, table), []
    while cursor is not None and cursor in by_id:
        if cursor == snapshot_id:
            return operations
        operations.append(by_id[cursor].operation)
        cursor = by_id[cursor].parent_id
    return None


def only_compactions_since(spark: Sql, table: str, snapshot_id: int | None) -> bool:
    """Main is at `snapshot_id`, or only compactions (`replace`: same rows, other files) were
    committed after it: rolling back to it, or past them, loses no data."""
    operations = operations_since(spark, table, snapshot_id)
    return operations is not None and all(op == "replace" for op in operations)


@dataclass(frozen=True)
class Change:
    """What the snapshots committed after `since` did to a table."""

    snapshots: int
    added_records: int
    deleted_records: int
    changed_partitions: int
    inserted: int
    updated: int
    deleted: int


def change_since(spark: Sql, table: str, since: int | None, key: str) -> Change:
    """Summaries of the snapshots after `since`, and the row-level changes from the changelog.

    Iceberg's summary counts records in rewritten files (copy-on-write rewrites whole files);
    the changelog view, with the table's key as identifier and carry-over rows removed, splits
    them exactly into inserted, updated and deleted rows.
    """
    table = checked_table(table)
    current = current_snapshot_id(spark, table)
    if current is None or current == since:
        return Change(0, 0, 0, 0, 0, 0, 0)
    snapshots = spark.sql(f"select snapshot_id, summary from {table}.snapshots order by committed_at").collect()
    ids = [row.snapshot_id for row in snapshots]
    after = snapshots[ids.index(since) + 1:] if since in ids else snapshots
    total = lambda name: sum(int(row.summary.get(name, 0) or 0) for row in after)  # noqa: E731
    if since is None:
        inserted = spark.sql(f"select count(*) from {table}").collect()[0][0]
        return Change(len(after), total("added-records"), total("deleted-records"),
                      total("changed-partition-count"), inserted, 0, 0)
    view = "changes_" + table.replace(".", "_")
    spark.sql(
        f"call spark_catalog.system.create_changelog_view(table => '{table}', "
        f"options => map('start-snapshot-id', '{since}', 'end-snapshot-id', '{current}'), "
        f"identifier_columns => array('{key}'), compute_updates => true, changelog_view => '{view}')"
    )
    counts = dict(spark.sql(f"select _change_type, count(*) from {view} group by _change_type").collect())
    spark.sql(f"drop view if exists {view}")
    return Change(
        snapshots=len(after),
        added_records=total("added-records"),
        deleted_records=total("deleted-records"),
        changed_partitions=total("changed-partition-count"),
        inserted=counts.get("INSERT", 0),
        updated=counts.get("UPDATE_AFTER", 0),
        deleted=counts.get("DELETE", 0),
    )


def watermarks(spark: Sql, control_schema: str = "control") -> dict[str, object]:
    table = checked_table(f"{control_schema}.etl_watermark")
    if not table_exists(spark, table):
        return {}
    return {row.pipeline_name: row.watermark_ts for row in spark.sql(f"select pipeline_name, watermark_ts from {table}").collect()}
