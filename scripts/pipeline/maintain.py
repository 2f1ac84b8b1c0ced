"""Table maintenance: compact small files, apply delete files, expire old snapshots, and keep
every backfill reversible.

Landing appends a file per batch and every MERGE adds files, so tables collect small files
(31 landed days of `raw.order_items` are 120 files); each scan pays per file. The marts MERGE in
merge-on-read mode: a MERGE adds the changed rows and position-delete files, which every reader
applies until the data files they point at are rewritten. Compaction (`rewrite_data_files`,
bin-pack) rewrites small files into few, and every data file that has a delete file (option
`delete-file-threshold` 1), then, while delete files remain, rewrites them
(`rewrite_position_delete_files`), which drops the ones left pointing at no live data file:
each a `replace` snapshot, same rows, other files. Expiry
(`expire_snapshots`) drops snapshots older than the retention and the files only they reference.
Orphan removal (`remove_orphan_files`) deletes the files under a table's folder that no snapshot
of it references and that are older than three days (Iceberg's default: a write still running
has not committed its files yet): the files a failed write left (a full disk, a lost task, a
killed run: the table never referenced them).

Change records (`control.<model>__changes`, what each run of a model of the kind changed, kept
for the models of the kind that read it: macro record_model_changes) grow by one commit per run
that changed rows. A record is needed until every reader has run after it (a reader's daily run
reads the records since its own last run, less the landing overlap): `expire_change_records`
deletes those older than the retention and than every reader's last run (less an hour, more than
any landing overlap), and the tables are then compacted and expired like the others. A reader
that has not run since keeps the records it will read; a table held by a running backfill (its
readers read the backfill's own records) is left alone.

What is never done:
- a table held by a running backfill is left alone (a commit to its main would make the
  backfill's publish refuse, and its branch would no longer fast-forward);
- a snapshot that `pipeline rollback` of a published backfill still needs is never expired:
  the retention is shortened to keep it. Compaction does not block rollback (the runner rolls
  back past `replace` commits, which change no rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from pipeline import iceberg, warehouse
from pipeline.engine import Sql

DEFAULT_SCHEMAS = ("raw", "marts")
_CONTROL = "control"


@dataclass(frozen=True)
class TableMaintenance:
    table: str
    skipped: str | None = None  # why nothing was done
    files_before: int = 0  # data files
    files_after: int = 0
    rewritten_files: int = 0
    delete_files_before: int = 0  # position/equality delete files readers apply
    delete_files_after: int = 0
    expired_snapshots: int = 0
    kept_for_rollback: str | None = None  # the run whose rollback shortened the retention
    removed_orphan_files: int = 0  # files under the table's folder no snapshot referenced


@dataclass(frozen=True)
class ChangeRecordsExpiry:
    table: str  # control.<model's table>__changes
    model: str | None  # the model whose changes it records (None: no model of the project)
    readers: tuple[str, ...]  # the models of the kind that read them
    deleted_records: int = 0
    kept_from: datetime | None = None  # records at or after this are kept (None: nothing deleted)
    skipped: str | None = None  # why nothing was deleted


# more than any landing overlap a reader's run uses (var landing_overlap_minutes: 0 embedded,
# 60 on a cluster by default): a record within it of a reader's last run is kept
_READER_MARGIN = timedelta(hours=1)
_CHANGES_SUFFIX = "__changes"


def iceberg_tables(spark: Sql, schemas: tuple[str, ...] = DEFAULT_SCHEMAS) -> list[str]:
    return sorted(str(r) for r in warehouse.relations(spark, schemas) if not r.is_view)


def change_record_tables(spark: Sql) -> list[str]:
    """The change records' tables (control.<model's table>__changes) the warehouse holds."""
    return [t for t in iceberg_tables(spark, (_CONTROL,)) if t.endswith(_CHANGES_SUFFIX)]


def expire_change_records(
    spark: Sql,
    keep: timedelta = timedelta(days=7),
    now: datetime | None = None,
    reader_margin: timedelta = _READER_MARGIN,
) -> list[ChangeRecordsExpiry]:
    """Delete the change records no reader will read again: older than `keep` and than every
    reader's last run (control.etl_watermark's last_run_started_at) less `reader_margin`. The
    readers come from the project's manifest (scope.changes naming the model); a table whose
    model the project no longer has, or no model reads, keeps only `keep`. A reader with no
    recorded run recomputes every key when it runs: it needs none."""
    from pipeline.manifest import incremental_models

    models = incremental_models()
    by_table = {m.change_records: m for m in models}  # control.<its table>__changes -> the model
    held, _ = _backfill_holds(spark)
    started: dict[str, datetime] = {}
    if iceberg.table_exists(spark, f"{_CONTROL}.etl_watermark"):
        started = {
            r.pipeline_name: r.last_run_started_at
            for r in spark.sql(
                f"select pipeline_name, last_run_started_at from {_CONTROL}.etl_watermark"
                " where last_run_started_at is not null"
            ).collect()
        }
    results = []
    for table in change_record_tables(spark):
        model = by_table.get(table)
        readers = tuple(sorted(m.name for m in models if model is not None and model.name in m.upstream_models))
        name = model.name if model else None
        if model is not None and model.relation in held:
            results.append(
                ChangeRecordsExpiry(table, name, readers, skipped=f"held by running backfill {held[model.relation]}")
            )
            continue
        # naive UTC, as the session (UTC) returns timestamps
        cutoff = ((now or datetime.now(UTC)) - keep).replace(tzinfo=None)
        for reader in readers:
            if reader in started:
                cutoff = min(cutoff, started[reader] - reader_margin)
        older = f"_run_started_at < timestamp '{cutoff.strftime('%Y-%m-%d %H:%M:%S.%f')}'"
        [row] = spark.sql(f"select count(*) as n from {table} where {older}").collect()
        if row.n:
            spark.sql(f"delete from {table} where {older}").collect()
        results.append(
            ChangeRecordsExpiry(table, name, readers, deleted_records=int(row.n), kept_from=cutoff if row.n else None)
        )
    return results


def _backfill_holds(spark: Sql) -> tuple[dict[str, str], dict[str, tuple[str, int]]]:
    """(tables held by a running backfill -> run id, tables of a published backfill that can still
    be rolled back -> (run id, the snapshot its rollback restores)). Read only: no control table
    is created here."""
    held: dict[str, str] = {}
    reversible: dict[str, tuple[str, int]] = {}
    if not (
        iceberg.table_exists(spark, "control.backfill_runs") and iceberg.table_exists(spark, "control.backfill_tables")
    ):
        return held, reversible
    rows = spark.sql(
        "select runs.run_id, runs.status, tables.table_name, tables.pre_publish_snapshot_id,"
        " tables.published_snapshot_id from control.backfill_runs as runs"
        " inner join control.backfill_tables as tables on runs.run_id = tables.run_id"
        " where runs.status in ('running', 'paused', 'published') and tables.rolled_back_at is null"
    ).collect()
    for row in rows:
        if row.status in ("running", "paused"):  # a commit to its main would make it run again
            held[row.table_name] = row.run_id
        elif (
            row.pre_publish_snapshot_id is not None
            and row.pre_publish_snapshot_id != row.published_snapshot_id
            and iceberg.only_compactions_since(spark, row.table_name, row.published_snapshot_id)
        ):
            reversible[row.table_name] = (row.run_id, row.pre_publish_snapshot_id)
    return held, reversible


def _file_counts(spark: Sql, table: str) -> tuple[int, int]:
    """(data files, delete files) of the table's current snapshot."""
    row = spark.sql(
        f"select count_if(content = 0) as data_files, count_if(content <> 0) as delete_files from {table}.files"
    ).collect()[0]
    return int(row.data_files or 0), int(row.delete_files or 0)


def maintain(
    spark: Sql,
    tables: list[str] | None = None,
    compact: bool = True,
    expire_older_than: timedelta | None = timedelta(days=7),
    retain_last: int = 5,
    now: datetime | None = None,
    orphans_older_than: timedelta | None = timedelta(days=3),
) -> list[TableMaintenance]:
    """Compact, expire and/or remove the orphan files of `tables` (default: every Iceberg table of
    raw and marts, and the change records' tables)."""
    names = [iceberg.checked_table(t) for t in (tables or iceberg_tables(spark) + change_record_tables(spark))]
    missing = [t for t in names if not iceberg.table_exists(spark, t)]
    if missing:
        raise ValueError(f"table {missing[0]} does not exist")
    if retain_last < 1:
        raise ValueError("retain_last must be at least 1")
    if orphans_older_than is not None and orphans_older_than < timedelta(days=1):
        raise ValueError(
            "orphans_older_than must be at least a day (Iceberg's remove_orphan_files refuses less: "
            "a running write's files are not referenced yet)"
        )
    held, reversible = _backfill_holds(spark)
    # the session's cached relations first (a dbt run in this session left its scope keys and
    # versions cached: temporary views over the change records and the landed tables). A
    # commit here makes Spark re-plan every cached relation over the table, and such a plan
    # was bound to the snapshot it was cached at: after an expiry that deleted that snapshot's
    # manifests, the re-plan failed (`NotFoundException ... -m0.avro`) and so did maintain, in
    # the process that had run the models (the benchmark's maintain step, the test's). Nothing
    # reads those caches after their invocation; a view over them reads its tables again.
    spark.sql("clear cache").collect()
    results = []
    for table in names:
        if table in held:
            results.append(TableMaintenance(table, skipped=f"held by running backfill {held[table]}"))
            continue
        before, deletes_before = _file_counts(spark, table)
        rewritten = _compact(spark, table) if compact else 0
        expired, kept_for = 0, None
        if expire_older_than is not None:
            expired, kept_for = _expire(
                spark, table, (now or datetime.now(UTC)) - expire_older_than, retain_last, reversible.get(table)
            )
        orphans = 0
        if orphans_older_than is not None:
            orphans = _remove_orphans(spark, table, (now or datetime.now(UTC)) - orphans_older_than)
        after, deletes_after = _file_counts(spark, table)
        results.append(
            TableMaintenance(
                table,
                files_before=before,
                files_after=after,
                rewritten_files=rewritten,
                delete_files_before=deletes_before,
                delete_files_after=deletes_after,
                expired_snapshots=expired,
                kept_for_rollback=kept_for,
                removed_orphan_files=orphans,
            )
        )
    return results


def _compact(spark: Sql, table: str) -> int:
    """Rewrite a table's small files (in groups of two or more) and every data file with a delete
    file, then its delete files if any stay live; the data files rewritten."""
    row = spark.sql(
        f"call spark_catalog.system.rewrite_data_files(table => '{table}', "
        "options => map('min-input-files', '2', 'delete-file-threshold', '1'))"
    ).collect()[0]
    rewritten = int(row.rewritten_data_files_count)
    if _file_counts(spark, table)[1]:
        # the rewritten files keep the sequence number the rewrite started at, so the
        # delete files stay live though their data files are gone ("dangling deletes":
        # option remove-dangling-deletes removed none here); rewriting the delete files
        # drops every position that points at no live data file
        spark.sql(
            f"call spark_catalog.system.rewrite_position_delete_files(table => '{table}', "
            "options => map('rewrite-all', 'true'))"
        ).collect()
    return rewritten


def _expire(
    spark: Sql, table: str, older_than: datetime, retain_last: int, reversible: tuple[str, int] | None
) -> tuple[int, str | None]:
    """Expire a table's snapshots older than `older_than` but its last `retain_last`, and none
    from the snapshot a published backfill would roll back to (`reversible`: its run and
    snapshot) on: the snapshots expired, and the run kept reversible if the cutoff moved for it."""
    cutoff, kept_for = older_than.strftime("%Y-%m-%d %H:%M:%S.%f"), None
    if reversible is not None:
        run_id, snapshot = reversible
        # the session time zone is UTC (profile): compare and format on the engine
        rows = spark.sql(
            f"select date_format(committed_at, 'yyyy-MM-dd HH:mm:ss.SSSSSS') as at,"
            f" committed_at < timestamp '{cutoff}' as older from {table}.snapshots"
            " where snapshot_id = :s",
            args={"s": snapshot},
        ).collect()
        if rows and rows[0].older:
            cutoff, kept_for = rows[0].at, run_id
    row = spark.sql(
        f"call spark_catalog.system.expire_snapshots(table => '{table}', "
        f"older_than => timestamp '{cutoff}', retain_last => {int(retain_last)})"
    ).collect()[0]
    # the procedure reports files; each expired snapshot had exactly one manifest list
    return int(row.asDict().get("deleted_manifest_lists_count", 0) or 0), kept_for


def _remove_orphans(spark: Sql, table: str, older_than: datetime) -> int:
    """Remove a table's files no snapshot references, older than `older_than`; how many."""
    cutoff = older_than.strftime("%Y-%m-%d %H:%M:%S.%f")
    # one row per file removed
    return len(
        spark.sql(
            f"call spark_catalog.system.remove_orphan_files(table => '{table}', older_than => timestamp '{cutoff}')"
        ).collect()
    )
