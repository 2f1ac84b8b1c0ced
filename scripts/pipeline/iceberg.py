"""Reading what a run did from Iceberg metadata: snapshots, their summaries, row-level changes."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.engine import Sql, ThriftSql, united

_IDENTIFIER = r"[A-Za-z_][A-Za-z0-9_]*"
COLUMN_NAME = re.compile(_IDENTIFIER)  # a column name that may reach SQL
TABLE_NAME = re.compile(rf"{_IDENTIFIER}\.{_IDENTIFIER}")  # a table name that may reach SQL


def checked_table(table: str) -> str:
    """`table` if it is a plain schema.table name (it reaches SQL), else ValueError."""
    if not TABLE_NAME.fullmatch(table):
        raise ValueError(f"not a schema.table name: {table!r}")
    return table


def checked_column(column: str) -> str:
    """`column` if it is a plain column name (it reaches SQL), else ValueError."""
    if not COLUMN_NAME.fullmatch(column):
        raise ValueError(f"not a column name: {column!r}")
    return column


def table_exists(spark: Sql, table: str) -> bool:
    return spark.catalog.tableExists(checked_table(table))


def audited_models(spark: Sql, audit: str) -> set[str]:
    """The models the audit view `audit` covers: the view unites part views (its table property
    backfill_safe.audit_parts), each listing its models in backfill_safe.audited_models (macro
    replace_audit_tree). A view of an older release lists them itself. Empty: none."""

    top = _properties(spark, audit)
    parts = [p for p in (top.get("backfill_safe.audit_parts") or "").split(",") if p]
    listed = [top.get("backfill_safe.audited_models") or ""] + [
        _properties(spark, part).get("backfill_safe.audited_models") or "" for part in parts
    ]
    return {name for names in listed for name in names.split(",") if name}


def audit_chunks(spark: Sql, audit: str, size: int = 20) -> list[str]:
    """The audit view `audit` as relations to read one after the other (each a subquery in
    parentheses, to follow `from`), each the union of at most `size` of its models' audit views
    (engine.united): one query over every declared model's audit plans them all at once, and at
    200 models the driver ran out of memory (issue 81). The members are read from the part
    views' text (macro replace_audit_tree: each part unites its members' views); a view of an
    older release (no parts) is one relation, the view itself."""
    parts = [p for p in (_properties(spark, audit).get("backfill_safe.audit_parts") or "").split(",") if p]
    members = []
    for part in parts:
        [text] = spark.sql(f"show create table {checked_table(part)}").first()
        members.extend(re.findall(rf"select \* from ({_IDENTIFIER}\.{_IDENTIFIER})", text, flags=re.I))
    if not members:
        return [audit]
    return [f"({chunk})" for chunk in united([f"select * from {m}" for m in members], size)]


def _properties(spark: Sql, view: str) -> dict[str, str]:
    refreshed(spark, view)
    return {r.key: r.value for r in spark.sql(f"show tblproperties {checked_table(view)}").collect()}


def refreshed(spark: Sql, table: str) -> str:
    """`table`, after dropping this session's cached metadata of it.

    On a Spark Thrift Server every connection is a session with its own Iceberg table cache, and
    other sessions (dbt's MERGEs, a daily run) commit to the tables the runner inspects: without
    a refresh a session reads a snapshot up to 30 s old (unless the server disables the cache,
    as `pipeline.cluster` does). The embedded session is the one dbt commits through (one
    process, one catalog and its cache): nothing to refresh, and no statement is sent."""
    checked_table(table)
    if isinstance(spark, ThriftSql):
        spark.sql(f"refresh table {table}")
    return table


def _not_found(error: Exception) -> bool:
    """An error of Spark saying a table (or its schema) does not exist, from either engine."""
    return any(code in str(error) for code in ("TABLE_OR_VIEW_NOT_FOUND", "SCHEMA_NOT_FOUND"))


def partition_fields(spark: Sql, table: str) -> list[str]:
    """The names of a table's partition fields (from its `partitions` metadata table's `partition`
    struct); [] for an unpartitioned table. `describe` works on both engines."""
    for row in spark.sql(f"describe table {checked_table(table)}.partitions").collect():
        if row[0] == "partition":
            return re.findall(r"([A-Za-z_][A-Za-z0-9_]*):", row[1])
    return []


def branch_head(spark: Sql, table: str, branch: str) -> int | None:
    """The snapshot a branch of a table points at; None if the branch (or table) does not exist.
    One statement on the embedded engine (the runner and the tests ask it hundreds of times)."""
    try:
        rows = spark.sql(
            f"select snapshot_id from {refreshed(spark, table)}.refs where name = :b and type = 'BRANCH'",
            args={"b": branch},
        ).collect()
    except Exception as error:  # noqa: BLE001 - either engine's error type; anything else re-raised
        if _not_found(error):
            return None
        raise
    return rows[0][0] if rows else None


def current_snapshot_id(spark: Sql, table: str) -> int | None:
    """Main's snapshot: what every reader without a branch or WAP setting sees."""
    return branch_head(spark, table, "main")


def operations_since(spark: Sql, table: str, snapshot_id: int | None) -> list[str] | None:
    """The operations of main's commits after `snapshot_id` (newest first): [] if main is still
    there, None if `snapshot_id` is not an ancestor of main (main was reset past it, or it expired).
    A `replace` is a compaction (rewrite_data_files): same rows, other files."""
    table = refreshed(spark, table)
    by_id = {
        row.snapshot_id: row
        for row in spark.sql(f"select snapshot_id, parent_id, operation from {table}.snapshots").collect()
    }
    cursor, operations = current_snapshot_id(spark, table), list[str]()
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
    deleted_records: int  # rows removed from the live set: rewritten files' rows + position deletes
    changed_partitions: int
    inserted: int
    updated: int
    deleted: int


# The summary figures of rows that left the table's live set: the rows of removed data files
# (copy-on-write rewrites whole files) and the rows a merge-on-read commit deletes by position
# (or by equality) in delete files, which leave the data files in place. A commit that deletes
# a row of a data file that already has a delete file rewrites that delete file: its summary
# counts the old file's deletes again among the added (`added-position-deletes` 2 and
# `removed-position-deletes` 1 for one row deleted; issue 78: a restatement of one row printed
# -2), so the removed deletes are subtracted: each figure is a pair (added, removed).
DELETED_FIGURES = (
    ("deleted-records", None),
    ("added-position-deletes", "removed-position-deletes"),
    ("added-equality-deletes", "removed-equality-deletes"),
)


def deleted_records(summary: dict) -> int:
    """Rows a snapshot removed from the table's live set, whatever the merge mode (see
    DELETED_FIGURES): the `deleted_records` of run records, backfill windows and `Change`.
    macro deleted_records_figure is the same sum in SQL."""

    def figure(name: str | None) -> int:
        return int(summary.get(name, 0) or 0) if name else 0

    return sum(figure(added) - figure(removed) for added, removed in DELETED_FIGURES)


def change_since(spark: Sql, table: str, since: int | None, key: str) -> Change:
    """Summaries of the snapshots after `since`, and the row-level changes between the table at
    `since` and the table now.

    Iceberg's summary counts records in rewritten files (copy-on-write rewrites whole files) or
    position deletes (merge-on-read); the row-level split into inserted, updated and deleted
    keys comes from the two versions of the table joined on `key` (time travel). Iceberg's
    changelog view would give the same for copy-on-write commits, but it refuses snapshots with
    delete files (Iceberg 1.10), which every merge-on-read MERGE writes. The join reads both
    versions whole: a report on what one run did, not a per-run cost.
    """
    table = checked_table(table)
    if not COLUMN_NAME.fullmatch(key):
        raise ValueError(f"not a column name: {key!r}")
    current = current_snapshot_id(spark, table)
    if current is None or current == since:
        return Change(0, 0, 0, 0, 0, 0, 0)
    snapshots = spark.sql(f"select snapshot_id, summary from {table}.snapshots order by committed_at").collect()
    ids = [row.snapshot_id for row in snapshots]
    after = snapshots[ids.index(since) + 1 :] if since in ids else snapshots
    total = lambda name: sum(int(row.summary.get(name, 0) or 0) for row in after)  # noqa: E731
    removed = sum(deleted_records(row.summary) for row in after)
    if since is None:
        inserted = spark.sql(f"select count(*) from {table}").collect()[0][0]
        return Change(len(after), total("added-records"), removed, total("changed-partition-count"), inserted, 0, 0)
    columns = [c for c in spark.table(table).columns if c != key]
    same = " and ".join(f"old_rows.{c} <=> new_rows.{c}" for c in columns) or "true"
    counts = spark.sql(
        "select"
        " count_if(old_rows.k is null) as inserted,"
        " count_if(new_rows.k is null) as deleted,"
        f" count_if(old_rows.k is not null and new_rows.k is not null and not ({same})) as updated"
        f" from (select {key} as k, * from {table} version as of {int(since)}) as old_rows"
        f" full outer join (select {key} as k, * from {table} version as of {int(current)}) as new_rows"
        " on old_rows.k = new_rows.k"
    ).collect()[0]
    return Change(
        snapshots=len(after),
        added_records=total("added-records"),
        deleted_records=removed,
        changed_partitions=total("changed-partition-count"),
        inserted=int(counts.inserted),
        updated=int(counts.updated),
        deleted=int(counts.deleted),
    )


def watermarks(spark: Sql, control_schema: str = "control") -> dict[str, object]:
    table = checked_table(f"{control_schema}.etl_watermark")
    if not table_exists(spark, table):
        return {}
    # a pipeline whose sources held no loadable row yet has a row without a watermark
    return {
        row.pipeline_name: row.watermark_ts
        for row in spark.sql(
            f"select pipeline_name, watermark_ts from {table} where watermark_ts is not null"
        ).collect()
    }
