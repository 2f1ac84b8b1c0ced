"""`pipeline maintain`: compact small files, expire snapshots and remove orphan files, keeping every
backfill reversible."""

from __future__ import annotations

import click

from pipeline.cli import command, console


@click.option(
    "--tables",
    metavar="T",
    help="schema.table names, space or comma separated. Default: every Iceberg table of the raw "
    "and marts schemas, and the change records' tables (control.*__changes).",
)
@click.option("--no-compact", is_flag=True, help="Only expire snapshots.")
@click.option(
    "--expire-days",
    type=int,
    default=7,
    show_default=True,
    metavar="N",
    help="Expire snapshots older than N days; -1 expires nothing.",
)
@click.option(
    "--retain-last",
    type=int,
    default=5,
    show_default=True,
    metavar="N",
    help="Always keep the newest N snapshots of each table.",
)
@click.option(
    "--orphan-days",
    type=int,
    default=3,
    show_default=True,
    metavar="N",
    help="Remove the files under a table's folder that no snapshot references and older than N "
    "days (what a failed write left); -1 removes none.",
)
def maintain(tables: str | None, no_compact: bool, expire_days: int, retain_last: int, orphan_days: int) -> int:
    """Compact small files (Iceberg rewrite_data_files), expire snapshots older than
    --expire-days (expire_snapshots) and remove orphan files older than --orphan-days
    (remove_orphan_files) of the raw and mart tables and the change records'.
    Without --tables, first delete the change records no reader will read again (older
    than --expire-days and than every reader's last run). Tables held by a running backfill
    are skipped; snapshots a published backfill's rollback still needs are kept."""
    import re
    from datetime import timedelta

    from pipeline.iceberg import TABLE_NAME  # pyspark's Python side only: no JVM yet

    out = console()
    names = [t for t in re.split(r"[\s,]+", tables or "") if t]
    bad = [t for t in names if not TABLE_NAME.fullmatch(t)]
    if bad or expire_days < -1 or retain_last < 1 or orphan_days == 0 or orphan_days < -1:
        problem = (
            f"--tables {bad[0]!r} is not a schema.table name"
            if bad
            else "--expire-days must be -1 or more"
            if expire_days < -1
            else "--orphan-days must be -1 or at least 1 (Iceberg removes no orphan file younger than a day)"
            if orphan_days == 0 or orphan_days < -1
            else "--retain-last must be at least 1"
        )
        out.print(f"[red]refused:[/] {problem}")
        return 2
    from pipeline.engine import get_engine
    from pipeline.maintain import expire_change_records
    from pipeline.maintain import maintain as run_maintenance

    engine = get_engine()
    expired_records = []
    try:
        if not names and expire_days >= 0:
            # before the tables' own expiry, so the deleted records' files go with it; the
            # readers are the project's declarations (a fresh parse)
            from pipeline.dbt import parse_project

            parse_project()
            expired_records = expire_change_records(engine, keep=timedelta(days=expire_days))
        results = run_maintenance(
            engine,
            names or None,
            compact=not no_compact,
            expire_older_than=None if expire_days < 0 else timedelta(days=expire_days),
            retain_last=retain_last,
            orphans_older_than=None if orphan_days < 0 else timedelta(days=orphan_days),
        )
    except ValueError as error:
        out.print(f"[red]refused:[/] {error}")
        return 2
    _print_results(out, results, expired_records)
    return 0


def _print_results(out, results: list, expired_records: list) -> None:
    """What maintenance did per table, then per change records' table (if it expired any)."""
    from rich.table import Table

    table = Table(title="maintenance")
    for column in (
        "table",
        "data files before",
        "after",
        "rewritten",
        "delete files before",
        "after",
        "snapshots expired",
        "orphan files removed",
        "note",
    ):
        table.add_column(column)
    for r in results:
        note = r.skipped or (f"kept snapshots for rollback of {r.kept_for_rollback}" if r.kept_for_rollback else "")
        table.add_row(
            r.table,
            str(r.files_before),
            str(r.files_after),
            str(r.rewritten_files),
            str(r.delete_files_before),
            str(r.delete_files_after),
            str(r.expired_snapshots),
            str(r.removed_orphan_files),
            note,
        )
    out.print(table)
    if expired_records:
        records = Table(title="change records (what models of the kind changed, for their readers)")
        for column in ("table", "read by", "records deleted", "kept from", "note"):
            records.add_column(column)
        for expiry in expired_records:
            records.add_row(
                expiry.table,
                ", ".join(expiry.readers) or "(no model)",
                str(expiry.deleted_records),
                str(expiry.kept_from or ""),
                expiry.skipped or "",
            )
        out.print(records)


def register(group: click.Group) -> None:
    """`pipeline maintain`, with its --help's exit codes (pipeline.cli.EXIT_CODES)."""
    command(
        group,
        "maintain",
        short_help="Compact small files, expire snapshots, remove orphan files, keep backfills reversible.",
    )(maintain)
