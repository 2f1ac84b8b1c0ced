"""What a window committed, per table, from Iceberg's snapshot summaries on the run's branch:
snapshots, records added and deleted, data files added and removed, partitions changed. A
window's checkpoint records them (control.backfill_windows.table_stats, run_records)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pipeline import iceberg
from pipeline.backfill import plan as planning
from pipeline.engine import Sql

# what a window's statistics sum per table (changes, changes_in_dates)
WINDOW_FIGURES = ("snapshots", "added", "deleted", "added_files", "removed_files", "changed_partitions")


def _add_summary(totals: dict[str, int], figures: dict[str, str]) -> None:
    """Add one Iceberg summary's (a snapshot's, or one partition's entry in it) records and
    files to a window's `totals`."""
    for name, key in (
        ("added", "added-records"),
        ("added_files", "added-data-files"),
        ("removed_files", "deleted-data-files"),
    ):
        totals[name] += int(figures.get(key, 0) or 0)
    totals["deleted"] += iceberg.deleted_records(figures)


def changes(
    spark: Sql, tables: list[str], branch: str, started: datetime, finished: datetime
) -> dict[str, dict[str, int]]:
    """Per table, the sums of the summaries of the snapshots a window committed to `branch`
    (committed_on: the runner is the branch's only writer, and windows run one after
    another)."""
    found = {}
    for table, snapshots in committed_on(spark, tables, branch, started, finished).items():
        totals = dict.fromkeys(WINDOW_FIGURES, 0)
        for snapshot in snapshots:
            totals["snapshots"] += 1
            totals["changed_partitions"] += int(snapshot.summary.get("changed-partition-count", 0) or 0)
            _add_summary(totals, snapshot.summary)
        found[table] = totals
    return found


def changes_in_dates(
    spark: Sql, dated: dict[str, str], branch: str, window: planning.Window, started: datetime, finished: datetime
) -> dict[str, dict[str, int]]:
    """Per table (-> its event date, which partitions it), the sums of the per-partition
    summaries of the window's dates in the snapshots committed to `branch` while the window
    ran. Windows at once commit to the same branches, so a snapshot's time does not tell
    whose it is; its partitions do (table property write.summary.partition-limit, which
    parallel.run_at_once sets: each snapshot's summary then holds a `partitions.<path>` entry
    per partition it wrote)."""
    committed = committed_on(spark, list(dated), branch, started, finished)
    first, last = window.start.isoformat(), window.end.isoformat()
    found = {}
    for table, event_date in dated.items():
        totals = dict.fromkeys(WINDOW_FIGURES, 0)
        partitions: set[str] = set()
        for snapshot in committed[table]:
            mine = False
            for key, value in (snapshot.summary or {}).items():
                fields = (
                    dict(part.split("=", 1) for part in key.removeprefix("partitions.").split("/") if "=" in part)
                    if key.startswith("partitions.")
                    else {}
                )
                day = fields.get(event_date)
                if day is None or not first <= day < last:
                    continue
                mine = True
                partitions.add(day)
                _add_summary(totals, dict(item.split("=", 1) for item in value.split(",") if "=" in item))
            totals["snapshots"] += mine
        totals["changed_partitions"] = len(partitions)
        found[table] = totals
    return found


def committed_on(spark: Sql, tables: list[str], branch: str, started: datetime, finished: datetime) -> dict[str, list]:
    """Per table, the snapshots on `branch`'s parent chain committed between `started` and
    `finished` (snapshot_id, parent_id, committed_us, summary), newest first. Read after the
    window, while the next one may already be committing, so the chain is walked from the
    branch's current head and later snapshots are skipped by time. One metadata query."""
    for table in tables:
        iceberg.refreshed(spark, table)
    union = " union all ".join(
        f"select '{t}' as table_name, s.snapshot_id, s.parent_id,"
        f" unix_micros(s.committed_at) as committed_us, s.summary,"
        f" r.snapshot_id as head from {t}.snapshots as s left join {t}.refs as r on r.name = :branch"
        for t in tables
    )
    snapshots: dict[str, dict[int, Any]] = {t: {} for t in tables}  # pyspark Rows
    heads: dict[str, int | None] = dict.fromkeys(tables)
    for row in spark.sql(union, args={"branch": branch}).collect():
        snapshots[row.table_name][row.snapshot_id] = row
        heads[row.table_name] = row.head
    # the engine's clock wrote committed_at; the window's times are this process's (one host)
    since, until = int(started.timestamp() * 1e6), int(finished.timestamp() * 1e6)
    found: dict[str, list] = {}
    for table in tables:
        found[table], cursor = [], heads[table]
        while cursor is not None and cursor in snapshots[table]:
            snapshot = snapshots[table][cursor]
            if snapshot.committed_us < since:
                break
            if snapshot.committed_us <= until:
                found[table].append(snapshot)
            cursor = snapshot.parent_id
    return found
