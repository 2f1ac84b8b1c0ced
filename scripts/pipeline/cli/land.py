"""`pipeline land`: validate files against the landing contract and append them to the raw tables."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from pipeline.cli import command


def register(group: click.Group) -> None:
    @command(group, "land", short_help="Validate files against the raw contract and append them.")
    @click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
    @click.option(
        "--table",
        metavar="T",
        help="Raw table to append every file to, as table or source.table (default: from each file's "
        "name); the raw tables are the sources declaring config.meta.backfill_safe.",
    )
    @click.option(
        "--nothing-new-exit",
        type=click.IntRange(0, 255),
        default=0,
        show_default=True,
        metavar="N",
        help="Exit N when no file was new (every one already landed, or none found): 99 is Airflow's "
        "BashOperator's skip code, so a daily run with nothing arrived shows skipped.",
    )
    def land(files: tuple[Path, ...], table: str | None, nothing_new_exit: int) -> int:
        """Validate FILES (Parquet or CSV files, or folders holding them: a landing folder of day
        folders) against the raw contract, then append each in one Iceberg commit, stamped and logged
        in control.landed_files. A file already landed into its table is skipped. Runs `dbt parse`
        first: the contract is the sources yml as it is now."""
        from pipeline.dbt import Dbt
        from pipeline.engine import get_engine
        from pipeline.land import LandingConflict, LandingError
        from pipeline.land import land as land_files

        paths = [f for p in files for f in (_files_under(p) if p.is_dir() else [p])]
        new = 0
        try:
            engine = get_engine()
            Dbt(quiet=True).invoke("parse")
            for landed in land_files(engine, paths, table=table):
                new += not landed.skipped
                note = "already landed, skipped" if landed.skipped else f"{landed.rows} rows"
                if landed.refused:
                    note += (
                        f" (after {landed.refused} refused commit{'s' if landed.refused > 1 else ''}: another "
                        "landing committed to the table or the landing log meanwhile)"
                    )
                print(f"{landed.path} -> {landed.relation} ({landed.table}): {note}")
        except LandingError as error:
            print(f"error: {error}; nothing was appended", file=sys.stderr)
            return 2
        except LandingConflict as error:
            print(
                f"error: {error}; the files before it were appended: landing the same files again skips and logs them",
                file=sys.stderr,
            )
            return 3
        if not new:
            print(f"nothing new: {len(paths)} file{'s' if len(paths) != 1 else ''} found, none not landed yet")
            return nothing_new_exit
        return 0


def _files_under(folder: Path) -> list[Path]:
    """A folder's files and its folders' files, in the order of their paths (day folders named by
    their date land in date order); hidden ones left out at every depth (a landing's staged
    copies, .DS_Store)."""
    return sorted(
        f
        for f in folder.rglob("*")
        if f.is_file() and not any(part.startswith(".") for part in f.relative_to(folder).parts)
    )
