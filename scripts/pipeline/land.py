"""Landing: append Parquet or CSV files to the append-only raw tables.

The contract (scripts/pipeline/contract.py) is what the dbt project's sources yml declares:
every source table with a `backfill_safe` block, read from dbt's manifest. Every file is
validated against it before anything is written: a missing, extra or
mistyped column, or a value that does not parse, is an error that names the file and the
column, and no file of the batch is appended. What is appended is exactly what was validated:
a CSV (and a Parquet file whose types are compatible but not the contract's own) is parsed by
Arrow and staged as Parquet in the contract's types beside the file; Spark reads only Parquet
in those types, by column name. Each valid file is then appended in one Iceberg commit,
stamped with `_loaded_at` (ingestion time) and `_source_file`, and logged with its row count in
control.landed_files (the data test landed_rows_are_loaded_or_quarantined checks that every
landed row is either loaded or quarantined). A file that was already landed into its table
(same absolute path, recorded in `_source_file`) is skipped, so landing the same batch twice
appends it once. On the embedded warehouse one process lands at a time (the state folder's
lock); through a Thrift Server two landings of one file may both find it not landed yet, so
there the append and its log entry are MERGEs that Iceberg validates (serializable): the one
that commits second is refused and tries again, and finds the file landed.
"""

from __future__ import annotations

import csv
import functools
import os
import re
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from glob import escape as glob_escape
from pathlib import Path
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from pipeline import contract as contracts
from pipeline.contract import SOURCE_FILE_METRICS, Contract, ContractError, RawTable
from pipeline.engine import Sql, ThriftSql, literal


class LandingError(ValueError):
    """A file that does not satisfy the landing contract."""


class LandingConflict(RuntimeError):
    """A commit refused by concurrent landings more times than a landing tries: the files of the
    batch before it are appended (landing the batch again skips and logs them)."""


# another landing committed to the table meanwhile, and nothing of this statement was applied:
# its commit refused by Iceberg's validation (optimistic concurrency); or, before any write, its
# MERGE's runtime file filtering found a commit newer than its scan; or the append's MERGE read
# the file's rows committed after its check (its matched clause meets every source row of the
# file: Spark refuses the MERGE)
_CONFLICT = re.compile(
    r"ValidationException|CommitFailedException|[Ff]ound conflicting"
    r"|Runtime file filtering is not possible: the table has been concurrently modified"
    r"|MERGE_CARDINALITY_VIOLATION"
)
CONFLICT_ATTEMPTS = 5  # a landing tries a refused commit again this many times, then fails
T = TypeVar("T")


@dataclass(frozen=True)
class LandedFile:
    path: Path
    table: str  # source.table
    relation: str  # schema.table
    rows: int
    skipped: bool = False
    # times a commit of its landing was refused (another landing committed first to its table, or
    # to the landing log, whose commit the batch's files share), then retried
    refused: int = 0


def table_for(path: Path, contract: Contract) -> RawTable:
    """The raw table a file belongs to, from its name: `orders.parquet`, `order_items-2.csv`, or
    `<source>__<table>...` where two sources land a table of the same name. The longest name
    that matches wins (`order_items-2` is order_items, not orders)."""
    stem = path.name.split(".")[0]

    def named(candidate: str) -> bool:
        return stem == candidate or stem.startswith(candidate + "-") or stem.startswith(candidate + "_")

    for table in sorted(contract.tables.values(), key=lambda t: -len(t.name)):
        if named(f"{table.source_name}__{table.name}"):
            return table
    matches = [t for t in contract.tables.values() if named(t.name)]
    longest = [t for t in matches if len(t.name) == max((len(m.name) for m in matches), default=0)]
    if len(longest) == 1:
        return longest[0]
    if longest:
        raise LandingError(
            f"{path}: table {longest[0].name!r} is landed by several sources; name the file "
            f"<source>__<table> (e.g. {longest[0].source_name}__{longest[0].name}.parquet) "
            "or pass --table source.table"
        )
    raise LandingError(
        f"{path}: cannot tell the raw table from the file name; name it after one of "
        f"{contract.names()} (e.g. {contract.names()[0]}.parquet) or pass --table"
    )


def _check_columns(path: Path, table: RawTable, found: pa.Schema) -> None:
    expected = table.arrow_schema()
    twice = sorted({name for name in found.names if found.names.count(name) > 1})
    if twice:
        raise LandingError(f"{path}: column {twice[0]!r} appears more than once (columns: {found.names})")
    missing = [name for name in expected.names if name not in found.names]
    extra = [name for name in found.names if name not in expected.names]
    if missing:
        raise LandingError(f"{path}: column {missing[0]!r} of {table.relation} is missing (missing: {missing})")
    if extra:
        raise LandingError(f"{path}: column {extra[0]!r} is not in the contract of {table.relation} (extra: {extra})")
    for field in expected:
        actual = found.field(field.name).type
        if not _compatible(field.type, actual):
            raise LandingError(
                f"{path}: column {field.name!r} has type {actual}, {table.relation} expects {field.type}"
            )


def _compatible(expected: pa.DataType, actual: pa.DataType) -> bool:
    if pa.types.is_null(actual):  # a column with no value (pandas writes all-null columns so)
        return True
    if pa.types.is_dictionary(actual):  # a dictionary-encoded column (pandas' categoricals)
        return _compatible(expected, actual.value_type)
    if pa.types.is_timestamp(expected):
        return pa.types.is_timestamp(actual)
    if pa.types.is_decimal(expected):
        return pa.types.is_decimal(actual) and actual.scale == expected.scale and actual.precision <= expected.precision
    if pa.types.is_string(expected):
        return pa.types.is_string(actual) or pa.types.is_large_string(actual)
    return actual == expected


@dataclass(frozen=True)
class CheckedFile:
    """A file that satisfies the contract: its rows, and the Parquet file whose columns have the
    contract's exact types that the append reads (the file itself, or a staged copy)."""

    path: Path
    table: RawTable
    rows: int
    staged: Path | None = None  # written by check(stage=True), removed by the landing when done

    @property
    def read_path(self) -> Path:
        return self.staged or self.path


def validate(path: Path, table: RawTable) -> int:
    """Check one file against the contract of its raw table; return its row count."""
    return check(path, table).rows


def check(path: Path, table: RawTable, stage: bool = False) -> CheckedFile:
    """Check one file; with `stage`, also write what the append will read when the file itself
    will not do: the rows as Arrow parsed them, in the contract's exact types, as Parquet
    beside the file (a CSV always: Spark's CSV reader would map the header's columns by
    position and parse values its own way; a Parquet file whose types are compatible but not
    the contract's own, e.g. nanosecond or zoned timestamps, a narrower decimal, an all-null
    column). What is appended is then exactly what was validated."""
    if not path.is_file():
        raise LandingError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            parquet = pq.ParquetFile(path)
            schema, rows = parquet.schema_arrow, parquet.metadata.num_rows
        except (pa.ArrowException, OSError) as exc:
            raise LandingError(f"{path}: not a readable Parquet file ({exc})") from exc
        _check_columns(path, table, schema)
        expected = table.arrow_schema()
        if all(schema.field(field.name).type == field.type for field in expected):
            return CheckedFile(path, table, rows)
        try:
            parsed = parquet.read(columns=expected.names)
        except (pa.ArrowException, OSError) as exc:
            raise LandingError(f"{path}: not a readable Parquet file ({exc})") from exc
        exact = _in_contract_types(path, table, parsed)
    elif suffix == ".csv":
        exact = _in_contract_types(path, table, _read_csv(path, table))
    else:
        raise LandingError(f"{path}: unsupported file type {suffix!r}; land .parquet or .csv files")
    if not stage:
        return CheckedFile(path, table, exact.num_rows)
    # in a hidden folder (which a landing of the folder passes over): Spark reads no file whose
    # own name is hidden
    staged = path.parent / f"{_staging_prefix()}{os.getpid()}" / f"{path.name}.parquet"
    try:
        staged.parent.mkdir(exist_ok=True)
        pq.write_table(exact, staged)
    except OSError as exc:
        _remove_staged(staged)
        raise LandingError(
            f"{path}: cannot write its validated rows beside it, in {staged.parent.name}/, for "
            f"the append to read ({exc}); land it from a folder the landing can write to"
        ) from exc
    return CheckedFile(path, table, exact.num_rows, staged)


def _staging_prefix() -> str:
    """A landing's staging folder is this prefix and its process id."""
    return f".landing-{socket.gethostname()}-"


def _remove_orphaned_staging(folder: Path) -> None:
    """Remove the staging folders a landing on this host left when it was killed before its
    `finally` ran (its process is gone). A folder of another host is left alone: a landing there
    may still be writing it (a landing folder on shared storage, read by a Thrift Server)."""
    prefix = _staging_prefix()
    for leftover in folder.glob(f"{glob_escape(prefix)}*"):
        pid = leftover.name[len(prefix) :]
        if pid.isdigit() and int(pid) != os.getpid() and not _process_alive(int(pid)):
            shutil.rmtree(leftover, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _remove_staged(staged: Path) -> None:
    staged.unlink(missing_ok=True)
    try:
        staged.parent.rmdir()
    except OSError:
        pass  # another staged file of the batch is still there, or it is already gone


def _in_contract_types(path: Path, table: RawTable, parsed: pa.Table) -> pa.Table:
    """The file's columns in the contract's order and exact types (a timestamp without a zone is
    UTC, the session time zone), or a LandingError naming the column that cannot be cast
    without losing something (e.g. a timestamp finer than a microsecond)."""
    columns = []
    for field in table.arrow_schema():
        column = parsed.column(field.name)
        try:
            columns.append(column.cast(field.type, safe=True))
            if pa.types.is_decimal(field.type):
                _check_precision(columns[-1], field.type)
        except (pa.ArrowException, ValueError) as exc:
            raise LandingError(
                f"{path}: column {field.name!r} has a value that does not fit {table.relation}'s {field.type} ({exc})"
            ) from exc
    return pa.Table.from_arrays(columns, schema=table.arrow_schema())


def _check_precision(column: pa.ChunkedArray, kind: pa.Decimal128Type) -> None:
    """Arrow's CSV parser and its casts keep a decimal's scale but not its precision: a value
    with more integer digits than the column holds would be staged as if it fitted."""
    wide = pa.decimal128(38, kind.scale)
    limit = pa.scalar(Decimal(10) ** (kind.precision - kind.scale), wide)
    widened = column.cast(wide)
    over = pc.filter(widened, pc.greater_equal(pc.abs(widened), limit))
    if len(over):
        raise ValueError(f"{over[0].as_py()} has more than {kind.precision - kind.scale} digits before the point")


def _read_csv(path: Path, table: RawTable) -> pa.Table:
    """A CSV's rows, by the header's column names, with Arrow's parser: an unquoted empty field
    is null and a quoted one an empty string (as Spark reads CSV), no other spelling of null
    (a string column's "NA" stays "NA"), a quoted value may span lines."""
    expected = table.arrow_schema()
    try:
        with path.open("rb") as handle:
            header_line = handle.readline().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LandingError(f"{path}: the header is not UTF-8 ({exc})") from exc
    names = next(csv.reader([header_line]), []) if header_line.strip() else []
    if not names:
        raise LandingError(f"{path}: empty file, no header row")
    _check_columns(
        path,
        table,
        pa.schema([pa.field(n, expected.field(n).type if n in expected.names else pa.string()) for n in names]),
    )
    # CSV timestamps carry no zone: parse them as naive (the session time zone is UTC)
    types = {f.name: (pa.timestamp("us") if pa.types.is_timestamp(f.type) else f.type) for f in expected}
    try:
        return pa_csv.read_csv(
            path,
            parse_options=pa_csv.ParseOptions(newlines_in_values=True),
            convert_options=pa_csv.ConvertOptions(
                column_types=types, strings_can_be_null=True, null_values=[""], quoted_strings_can_be_null=False
            ),
        )
    except pa.ArrowInvalid as exc:
        message = str(exc)
        match = re.search(r"CSV column #(\d+)", message)
        if match and int(match.group(1)) < len(names):
            column = names[int(match.group(1))]
            if "UTF8" in message:
                raise LandingError(f"{path}: column {column!r} has a value that is not UTF-8 ({message})") from exc
            raise LandingError(f"{path}: column {column!r} has a value that does not parse ({message})") from exc
        raise LandingError(
            f"{path}: malformed CSV, a row does not match the header's {len(names)} columns ({message})"
        ) from exc
    except (pa.ArrowException, OSError) as exc:
        raise LandingError(f"{path}: not a readable CSV file ({exc})") from exc


LANDED_FILES = "control.landed_files"
# its paths kept whole in the column metrics, as the raw tables' (SOURCE_FILE_METRICS)
LANDED_FILES_METRICS = "write.metadata.metrics.column.source_file"


def ensure_raw_tables(spark: Sql, contract: Contract) -> None:
    for schema in contract.schemas():
        spark.sql(f"create schema if not exists {schema}")
    for table in contract.tables.values():
        spark.sql(table.create_table_sql())
    spark.sql("create schema if not exists control")
    # the landing's log, for the count check landed = loaded + quarantined (a data test)
    spark.sql(
        f"create table if not exists {LANDED_FILES} (table_name string, source_file string,"
        " file_rows bigint, landed_at timestamp) using iceberg tblproperties ('format-version' = '2',"
        f" '{LANDED_FILES_METRICS}' = 'full')"
    )


def _keep_metrics_whole(spark: Sql, relation: str, key: str) -> None:
    """A table created before its file paths' column metrics were kept whole (SOURCE_FILE_METRICS,
    LANDED_FILES_METRICS) gets the property before a landing writes to it: the files written from
    then on are pruned exactly by a path (a metadata read; an Iceberg commit the first time only)."""
    shown = spark.sql(f"show tblproperties {relation} ('{key}')").collect()
    if not shown or shown[0][1] != "full":
        spark.sql(f"alter table {relation} set tblproperties ('{key}' = 'full')")


def _log_landed(spark: Sql, files: list[tuple[str, Path, int]], exclusive: bool = True) -> int:
    """One commit to the landing log for the files (source.table, path, rows) of a batch. Not
    `exclusive` (another process may log the same file at once): a MERGE that adds only the
    files not logged yet, and that Iceberg refuses if a file was logged meanwhile. How many
    times its commit was refused (another landing logged a file of the batch first)."""
    if not files:
        return 0
    rows, args = [], {}
    for n, (table, path, count) in enumerate(files):
        rows.append(f"(:t{n}, :f{n}, cast(:r{n} as bigint), current_timestamp())")
        args.update({f"t{n}": table, f"f{n}": str(path), f"r{n}": count})
    if exclusive:
        spark.sql(f"insert into {LANDED_FILES} values {', '.join(rows)}", args=args)
        return 0
    paths = ", ".join(f":f{n}" for n in range(len(files)))
    _, refused = _retried(
        lambda: spark.sql(
            f"merge into {LANDED_FILES} as logged using (select * from values {', '.join(rows)}"
            " as batch(table_name, source_file, file_rows, landed_at)) as batch"
            # the batch's paths, a filter of the log alone: Iceberg validates the commit against the
            # entries logged meanwhile for these paths only (the log's path metrics are whole,
            # LANDED_FILES_METRICS), so landings of other files at once do not refuse it
            f" on logged.source_file in ({paths})"
            " and logged.table_name = batch.table_name and logged.source_file = batch.source_file"
            # never taken for a file logged before the MERGE read the table (it is not in the
            # batch): the clause makes the MERGE a row-level write, which Iceberg validates
            # against the files logged meanwhile (an insert-only MERGE is a plain append)
            " when matched then update set logged.landed_at = logged.landed_at"
            " when not matched then insert *",
            args=args,
        ),
        f"the landing log {LANDED_FILES}",
    )
    return refused


def _retried(commit: Callable[[], T], what: str) -> tuple[T, int]:
    """Run a commit; refused by a concurrent one (Iceberg's validation), run it again, a bounded
    number of times. Its result, and how many times it was refused."""
    for attempt in range(1, CONFLICT_ATTEMPTS + 1):
        try:
            return commit(), attempt - 1
        except Exception as error:  # pyspark's and the Thrift client's errors have no common type
            if not _CONFLICT.search(str(error)):
                raise
            if attempt == CONFLICT_ATTEMPTS:
                raise LandingConflict(
                    f"{what}: refused {attempt} times by concurrent commits, the last: {str(error)[:500]}"
                ) from error
    raise AssertionError("unreachable: the last attempt returns or raises")


def _append(spark: Sql, checked: CheckedFile, exclusive: bool = True) -> None:
    """Append one file to its raw table in one commit, in SQL only (a temporary view over the
    Parquet file with the contract's types, then an insert by column name), so it runs the same
    on the embedded session and through a Thrift Server (which must see the file at the same
    path, and so its staged copy beside it). Not `exclusive` (another process may land the same
    file at once): a MERGE that Iceberg refuses if rows of the file were committed meanwhile."""
    columns = checked.table.columns
    # the files' calendar is the proleptic Gregorian one (Arrow, pandas, Spark 3 and the staged
    # copies write it; a file Spark 2 wrote says so in its metadata, which Spark follows): read
    # times before 1900 as they are written, where Spark's default refuses the whole file
    spark.sql(
        "create or replace temporary view landing_file using parquet"
        f" options (path {literal(str(checked.read_path))}, datetimeRebaseMode 'CORRECTED',"
        " int96RebaseMode 'CORRECTED')"
    )
    try:
        casts = ", ".join(f"cast({c.name} as {c.spark_type}) as {c.name}" for c in columns)
        rows = f"select {casts}, current_timestamp() as _loaded_at, :f as _source_file from landing_file"
        if exclusive:
            spark.sql(f"insert into {checked.table.relation} {rows}", args={"f": str(checked.path)})
            return
        spark.sql(
            f"merge into {checked.table.relation} as landed using ({rows}) as file"
            " on landed._source_file = :f and landed._source_file = file._source_file"
            # taken only when another landing committed the file after the check (then
            # Spark refuses the MERGE, several source rows meeting each row: _CONFLICT);
            # it makes the MERGE a row-level write, validated against the rows of this file
            # committed meanwhile (its target filter, _source_file = the file, is the
            # conflict filter)
            " when matched then update set landed._loaded_at = landed._loaded_at"
            " when not matched then insert *",
            args={"f": str(checked.path)},
        )
    finally:
        spark.sql("drop view if exists landing_file")


def land(spark: Sql, files: list[Path], table: str | None = None, contract: Contract | None = None) -> list[LandedFile]:
    """Validate every file, then append each one; nothing is appended if any file is invalid.
    `table` (table or source.table) lands every file there; else each file's name tells.
    `contract` defaults to the one of the project's manifest (contract.load)."""
    try:
        contract = contract or contracts.load()
        target = contract.table(table) if table is not None else None
    except ContractError as error:
        raise LandingError(
            f"--table {table!r}: {error}" if table is not None and "landed raw table" in str(error) else str(error)
        ) from error
    planned: list[CheckedFile] = []
    files = [Path(path).resolve() for path in files]
    for folder in {path.parent for path in files if path.parent.is_dir()}:
        _remove_orphaned_staging(folder)
    try:
        for path in files:
            planned.append(check(path, target or table_for(path, contract), stage=True))
        return _append_all(spark, contract, planned)
    finally:
        for checked in planned:
            if checked.staged:
                _remove_staged(checked.staged)


def _append_all(spark: Sql, contract: Contract, planned: list[CheckedFile]) -> list[LandedFile]:
    ensure_raw_tables(spark, contract)
    for relation in sorted({checked.table.relation for checked in planned}):
        _keep_metrics_whole(spark, relation, SOURCE_FILE_METRICS)
    _keep_metrics_whole(spark, LANDED_FILES, LANDED_FILES_METRICS)
    exclusive = not isinstance(spark, ThriftSql)  # the embedded warehouse: one process at a time
    landed: list[LandedFile] = []
    unlogged: list[tuple[str, Path, int]] = []
    for checked in planned:
        # refused because another landing committed to the table meanwhile: look again (the
        # file is landed now if it was the other's too)
        once, refused = _retried(
            functools.partial(_append_once, spark, checked, unlogged, exclusive),
            f"{checked.path}: its append to {checked.table.relation}",
        )
        landed.append(replace(once, refused=refused))
    # after the appends: a crash in between leaves files unlogged, and landing them again logs them
    log_refused = _log_landed(spark, unlogged, exclusive)
    logged = {path for _, path, _ in unlogged}
    return [replace(f, refused=f.refused + log_refused) if f.path in logged else f for f in landed]


def _append_once(
    spark: Sql, checked: CheckedFile, unlogged: list[tuple[str, Path, int]], exclusive: bool
) -> LandedFile:
    path, raw, rows = checked.path, checked.table, checked.rows
    already = spark.sql(
        f"select 1 from {raw.relation} where _source_file = :f limit 1", args={"f": str(path)}
    ).collect()
    if already:
        # a crash between the append and its log entry leaves the file unlogged: log it now
        logged = spark.sql(
            f"select 1 from {LANDED_FILES} where table_name in (:q, :t) and source_file = :f limit 1",
            args={"q": raw.qualified_name, "t": raw.name, "f": str(path)},
        ).collect()
        if not logged:
            unlogged.append((raw.qualified_name, path, rows))
        return LandedFile(path, raw.qualified_name, raw.relation, 0, skipped=True)
    _append(spark, checked, exclusive)
    unlogged.append((raw.qualified_name, path, rows))
    return LandedFile(path, raw.qualified_name, raw.relation, rows)
