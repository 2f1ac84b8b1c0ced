"""Landing: append Parquet or CSV files to the append-only raw tables.

The contract (scripts/pipeline/contract.py) is what the dbt project's sources yml declares:
every source table with a `backfill_safe` block, read from dbt's manifest. Every file is
validated against it before anything is written: a missing, extra or
mistyped column, or a value that does not parse, is an error that names the file and the
column, and no file of the batch is appended. Each valid file is then appended in one Iceberg
commit, stamped with `_loaded_at` (ingestion time) and `_source_file`, and logged with its row
count in control.landed_files (the data test landed_rows_are_loaded_or_quarantined checks that
every landed row is either loaded or quarantined). A file that was
already landed into its table (same absolute path, recorded in `_source_file`) is skipped, so
landing the same batch twice appends it once.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
from pipeline import contract as contracts
from pipeline.contract import Contract, ContractError, RawTable
from pipeline.engine import Sql, literal


class LandingError(ValueError):
    """A file that does not satisfy the landing contract."""


@dataclass(frozen=True)
class LandedFile:
    path: Path
    table: str  # source.table
    relation: str  # schema.table
    rows: int
    skipped: bool = False


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
        raise LandingError(f"{path}: table {longest[0].name!r} is landed by several sources; name the file "
                           f"<source>__<table> (e.g. {longest[0].source_name}__{longest[0].name}.parquet) "
                           "or pass --table source.table")
    raise LandingError(
        f"{path}: cannot tell the raw table from the file name; name it after one of "
        f"{contract.names()} (e.g. {contract.names()[0]}.parquet) or pass --table"
    )


def _check_columns(path: Path, table: RawTable, found: pa.Schema) -> None:
    expected = table.arrow_schema()
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
    if pa.types.is_timestamp(expected):
        return pa.types.is_timestamp(actual)
    if pa.types.is_decimal(expected):
        return pa.types.is_decimal(actual) and actual.scale == expected.scale and actual.precision <= expected.precision
    if pa.types.is_string(expected):
        return pa.types.is_string(actual) or pa.types.is_large_string(actual)
    return actual == expected or (pa.types.is_null(actual))


def validate(path: Path, table: RawTable) -> int:
    """Check one file against the contract of its raw table; return its row count."""
    if not path.is_file():
        raise LandingError(f"{path}: no such file")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        try:
            schema = pq.read_schema(path)
            rows = pq.ParquetFile(path).metadata.num_rows
        except (pa.ArrowInvalid, OSError) as exc:
            raise LandingError(f"{path}: not a readable Parquet file ({exc})") from exc
        _check_columns(path, table, schema)
        return rows
    if suffix == ".csv":
        return _validate_csv(path, table)
    raise LandingError(f"{path}: unsupported file type {suffix!r}; land .parquet or .csv files")


def _validate_csv(path: Path, table: RawTable) -> int:
    expected = table.arrow_schema()
    try:
        with path.open("rb") as handle:
            header_line = handle.readline().decode("utf-8")
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
        parsed = pa_csv.read_csv(
            path, convert_options=pa_csv.ConvertOptions(column_types=types, strings_can_be_null=True)
        )
    except pa.ArrowInvalid as exc:
        message = str(exc)
        match = re.search(r"CSV column #(\d+)", message)
        if match and int(match.group(1)) < len(names):
            column = names[int(match.group(1))]
            if "UTF8" in message:
                raise LandingError(f"{path}: column {column!r} has a value that is not UTF-8 ({message})") from exc
            raise LandingError(f"{path}: column {column!r} has a value that does not parse ({message})") from exc
        raise LandingError(f"{path}: malformed CSV, a row does not match the header's {len(names)} columns "
                           f"({message})") from exc
    return parsed.num_rows


LANDED_FILES = "control.landed_files"


def ensure_raw_tables(spark: Sql, contract: Contract) -> None:
    for schema in contract.schemas():
        spark.sql(f"create schema if not exists {schema}")
    for table in contract.tables.values():
        spark.sql(table.create_table_sql())
    spark.sql("create schema if not exists control")
    # the landing's log, for the count check landed = loaded + quarantined (a data test)
    spark.sql(f"create table if not exists {LANDED_FILES} (table_name string, source_file string,"
              " file_rows bigint, landed_at timestamp) using iceberg tblproperties ('format-version' = '2')")


def _log_landed(spark: Sql, files: list[tuple[str, Path, int]]) -> None:
    """One commit to the landing log for the files (source.table, path, rows) of a batch."""
    if files:
        rows, args = [], {}
        for n, (table, path, count) in enumerate(files):
            rows.append(f"(:t{n}, :f{n}, cast(:r{n} as bigint), current_timestamp())")
            args.update({f"t{n}": table, f"f{n}": str(path), f"r{n}": count})
        spark.sql(f"insert into {LANDED_FILES} values {', '.join(rows)}", args=args)


def _append(spark: Sql, path: Path, table: RawTable) -> None:
    """Append one file to its raw table in one commit, in SQL only (a temporary view over the
    file, then an insert), so it runs the same on the embedded session and through a Thrift
    Server (which must see the file at the same path)."""
    columns = table.columns
    location = literal(str(path))
    if path.suffix.lower() == ".parquet":
        spark.sql(f"create or replace temporary view landing_file using parquet options (path {location})")
    else:
        ddl = ", ".join(f"{c.name} {c.spark_type}" for c in columns)
        spark.sql(f"create or replace temporary view landing_file ({ddl}) using csv"
                  f" options (path {location}, header 'true', mode 'FAILFAST')")
    try:
        casts = ", ".join(f"cast({c.name} as {c.spark_type}) as {c.name}" for c in columns)
        spark.sql(f"insert into {table.relation} select {casts}, current_timestamp() as _loaded_at,"
                  " :f as _source_file from landing_file", args={"f": str(path)})
    finally:
        spark.sql("drop view if exists landing_file")


def land(spark: Sql, files: list[Path], table: str | None = None, contract: Contract | None = None
         ) -> list[LandedFile]:
    """Validate every file, then append each one; nothing is appended if any file is invalid.
    `table` (table or source.table) lands every file there; else each file's name tells.
    `contract` defaults to the one of the project's manifest (contract.load)."""
    try:
        contract = contract or contracts.load()
        target = contract.table(table) if table is not None else None
    except ContractError as error:
        raise LandingError(f"--table {table!r}: {error}" if table is not None and "landed raw table" in str(error)
                           else str(error)) from error
    planned = []
    for path in files:
        path = Path(path).resolve()
        raw = target or table_for(path, contract)
        planned.append((path, raw, validate(path, raw)))
    ensure_raw_tables(spark, contract)
    landed, unlogged = [], []
    for path, raw, rows in planned:
        already = spark.sql(
            f"select 1 from {raw.relation} where _source_file = :f limit 1", args={"f": str(path)}
        ).collect()
        if already:
            # a crash between the append and its log entry leaves the file unlogged: log it now
            logged = spark.sql(f"select 1 from {LANDED_FILES} where table_name in (:q, :t) and source_file = :f"
                               " limit 1", args={"q": raw.qualified_name, "t": raw.name, "f": str(path)}).collect()
            if not logged:
                unlogged.append((raw.qualified_name, path, rows))
            landed.append(LandedFile(path, raw.qualified_name, raw.relation, 0, skipped=True))
            continue
        _append(spark, path, raw)
        unlogged.append((raw.qualified_name, path, rows))
        landed.append(LandedFile(path, raw.qualified_name, raw.relation, rows))
    # after the appends: a crash in between leaves files unlogged, and landing them again logs them
    _log_landed(spark, unlogged)
    return landed
