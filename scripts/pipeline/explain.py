"""`pipeline explain MODEL ...`: what the next daily run of a model will read, before it runs.

One `dbt run` of the models with var `explain_next_run: true` (macro explaining): each model
compiles as its next run would, which reads for real what the run reads to find its scope
(watermark, lookback, scope keys and event dates), stages its select as the run stages it, and
then plans, without running them, its select and its MERGE (macro explain_statement, class
backfill_safe.ScanPlan). What it tells, per model and table:
- `ran`: the reads the explain itself made to find the scope and stage the select, the very
  reads the run makes before its MERGE: the on-run-end hook record_scans computes them as it
  does for `control.run_scans` and, under the explain, writes them to dbt's log instead of the
  table: scans, the largest scan's data files (a share of the table's) and all scans' together
  (no share of it: several scans of one table read some files more than once), rows;
- `select` and `merge`, planned: the data files, delete files and partitions Iceberg plans for
  each scan under the filters pushed to it, and those filters (the MERGE's pruning predicates
  on the model's own table). Filters applied only at run time (dynamic pruning of a join) are
  listed, not applied: the run may read fewer files than planned, never more.
Nothing is written to the model's table, the watermark does not move, no run is recorded; the
staged scratch table is dropped as after a run.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pipeline.engine import Sql

_LOG_PREFIX = "backfill_safe explain "
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*")


class ExplainError(ValueError):
    """A model that cannot be explained: not one of the framework's kind, or no table yet."""


@dataclass(frozen=True)
class PlannedScan:
    statement: str  # "select" (the model's select, staged before the MERGE) or "merge"
    table: str  # schema.table
    role: str  # "target" (the model's own table) or "source"
    # Iceberg's file scan tasks: a data file split into several (larger than the split size) is
    # counted once per split, so this may exceed table_data_files (printed beside it, not "of" it)
    data_files: int
    delete_files: int
    bytes: int
    partitioned: bool
    partitions: tuple[str, ...]  # partition paths, e.g. "order_date=2025-01-10"
    filters: str | None  # as pushed to Iceberg
    runtime_filters: str | None  # applied at run time only: not in the counts
    table_data_files: int | None  # the table's data files now (Iceberg tables)
    table_partitions: int | None  # the table's partitions holding data files now


@dataclass(frozen=True)
class ReadRan:
    """What the explain read, for real, of one table to find the model's scope and stage its
    select: what the run reads of it before its MERGE."""

    table: str
    role: str
    scans: int
    # planned by Iceberg after the pushed filters, summed over the scans: several scans of one
    # table make it no share of the table, so it is printed "of" nothing; largest_scan_files is
    data_files: int
    largest_scan_files: int
    rows: int
    filters: tuple[str, ...]
    table_data_files: int | None
    table_partitions: int | None


@dataclass(frozen=True)
class Explanation:
    model: str
    relation: str
    statements: tuple[tuple[str, str | None], ...]  # (statement, what it is / why there is none)
    scans: tuple[PlannedScan, ...]
    ran: tuple[ReadRan, ...] = ()
    ran_unknown: str | None = None  # why the reads that ran could not be told, if they could not

    @property
    def merges(self) -> bool:
        return any(scan.statement == "merge" for scan in self.scans)

    def merge_predicate(self) -> str | None:
        """The filters the MERGE's read of its own table was given: its pruning predicates."""
        for scan in self.scans:
            if scan.statement == "merge" and scan.role == "target":
                return scan.filters
        return None


def resolve(names: list[str]) -> dict:
    """The named models of the framework's kind, from a fresh parse (no Spark); ExplainError for
    a name that is not one."""
    from pipeline.dbt import parse_project
    from pipeline.manifest import incremental_models

    if not names:
        raise ExplainError("name at least one model")
    for name in names:
        if not _NAME.fullmatch(name):
            raise ExplainError(f"{name!r} is not a model name")
    parse_project()
    models = {m.name: m for m in incremental_models()}
    for name in names:
        if name not in models:
            raise ExplainError(
                f"{name} is not an incremental model of the framework's kind (those are: {', '.join(sorted(models))})"
            )
    return {name: models[name] for name in names}


def explain(engine: Sql, dbt, names: list[str]) -> list[Explanation]:
    """Plan the next daily run of each named model; ExplainError for a name that cannot be."""
    models = resolve(names)
    for name, model in models.items():
        if not engine.catalog.tableExists(model.relation):
            raise ExplainError(
                f"{name} has no table {model.relation} yet: its next run is a full build, "
                "which reads every row of its inputs"
            )
    _, lines = dbt.invoke_logging(
        _LOG_PREFIX, "run", "--select", " ".join(models), "--vars", json.dumps({"explain_next_run": True})
    )
    records = [json.loads(line) for line in lines]
    totals: dict[str, tuple[int | None, int | None]] = {}

    def table_totals(table: str) -> tuple[int | None, int | None]:
        if table not in totals:
            totals[table] = _table_totals(engine, table)
        return totals[table]

    # what ran: record_scans' figures (its one rule for whose read a scan is), told, not recorded
    ran = [r["reads"] for r in records if "reads" in r]
    ran_unknown = next((r["reads_unknown"] for r in records if "reads_unknown" in r), None)
    explained = []
    for name, model in models.items():
        mine = [r for r in records if r.get("model") == name]
        if not mine:  # nothing skips in silence
            raise RuntimeError(f"dbt ran {name} but it planned nothing: is its MERGE guarded_merge_sql?")
        scans = []
        for record in mine:
            for scan in (record["plan"] or {}).get("scans", []):
                table = scan["table"]
                if not _TABLE.fullmatch(table):  # a metadata table or a path: not a table of the warehouse
                    continue
                table_files, table_partitions = table_totals(table) if scan["iceberg"] else (None, None)
                scans.append(
                    PlannedScan(
                        statement=record["statement"],
                        table=table,
                        role="target" if table == model.relation else "source",
                        data_files=scan["data_files"],
                        delete_files=scan["delete_files"],
                        bytes=scan["bytes"],
                        partitioned=scan["partitioned"],
                        partitions=tuple(scan["partitions"]),
                        filters=scan["filters"],
                        runtime_filters=scan["runtime_filters"],
                        table_data_files=table_files,
                        table_partitions=table_partitions,
                    )
                )
        reads = []
        for figures in sorted((r for r in ran if r["model"] == name), key=lambda r: r["table"]):
            table = figures["table"]
            table_files, table_partitions = table_totals(table) if figures["iceberg"] else (None, None)
            reads.append(
                ReadRan(
                    table=table,
                    role="target" if table == model.relation else "source",
                    scans=figures["scans"],
                    data_files=figures["planned"],
                    largest_scan_files=figures["largest"],
                    rows=figures["rows"],
                    filters=tuple(figures["filters"]),
                    table_data_files=table_files,
                    table_partitions=table_partitions,
                )
            )
        explained.append(
            Explanation(
                model=name,
                relation=model.relation,
                statements=tuple((r["statement"], r["detail"]) for r in mine),
                scans=tuple(scans),
                ran=tuple(reads),
                ran_unknown=ran_unknown,
            )
        )
    return explained


def _table_totals(engine: Sql, table: str) -> tuple[int, int | None]:
    """The table's data files on main now, and the partitions they are in (None: unpartitioned)."""
    [files] = engine.sql(f"select count(*) as n from {table}.data_files").collect()
    if "partition" not in engine.table(f"{table}.data_files").columns:
        return int(files["n"]), None
    [partitions] = engine.sql(f"select count(distinct partition) as n from {table}.data_files").collect()
    return int(files["n"]), int(partitions["n"])
