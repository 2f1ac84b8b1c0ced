"""Landing: append Parquet or CSV files to the append-only raw tables.

Every file is validated against the contract before anything is written: a missing, extra or
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
from pipeline import contract
from pipeline.engine import Sql, literal


class LandingError(ValueError):
    """A file that does not satisfy the landing contract."""


@dataclass(frozen=True)
class LandedFile:
    path: Path
    table: str
    rows: int
    skipped: bool = False


def table_for(path: Path) -> str:
    """The raw table a file belongs to, from its name: `orders.parquet`, `order_items-2.csv`."""
    stem = path.name.split(".")[0]
    for table in sorted(contract.TABLES, key=len, reverse=True):
        if stem == table or stem.startswith(table + "-") or stem.startswith(table + "_"):
            if table == "orders" and stem.startswith("order_items"):
                continue
            return table
    raise LandingError(
        f"{path}: cannot tell the raw table from the file name; name it after one of "
        f"{sorted(contract.TABLES)} (e.g. orders.parquet) or pass --table"
    )


def _check_columns(path: Path, table: str, found: pa.Schema) -> None:
    expected = contract.arrow_schema(table)
    missing = [name for name in expected.names if name not in found.names]
    extra = [name for name in found.names if name not in expected.names]
    if missing:
        raise LandingError(f"{path}: column {missing[0]!r} of raw.{table} is missing (missing: {missing})")
    if extra:
        raise LandingError(f"{path}: column {extra[0]!r} is not in the contract of raw.{table} (extra: {extra})")
    for field in expected:
        actual = found.field(field.name).type
        if not _compatible(field.type, actual):
            raise LandingError(
                f"{path}: column {field.name!r} has type {actual}, raw.{table} expects {field.type}"
            )


def _compatible(expected: pa.DataType, actual: pa.DataType) -> bool:
    if pa.types.is_timestamp(expected):
        return pa.types.is_timestamp(actual)
    if pa.types.is_decimal(expected):
        return pa.types.is_decimal(actual) and actual.scale == expected.scale and actual.precision <= expected.precision
    if pa.types.is_string(expected):
        return pa.types.is_string(actual) or pa.types.is_large_string(actual)
    return actual == expected or (pa.types.is_null(actual))


def validate(path: Path, table: str) -> int:
    """Check one file against the contract of raw.<table>; return its row count."""
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


def _validate_csv(path: Path, table: str) -> int:
    expected = contract.arrow_schema(table)
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


def ensure_raw_tables(spark: Sql) -> None:
    spark.sql(f"create schema if not exists {contract.RAW_SCHEMA}")
    for table in contract.TABLES:
        spark.sql(contract.create_table_sql(table))
    spark.sql("create schema if not exists control")
    # the landing's log, for the count check landed = loaded + quarantined (a data test)
    spark.sql(f"create table if not exists {LANDED_FILES} (table_name string, source_file string,"
              " file_rows bigint, landed_at timestamp) using iceberg tblproperties ('format-version' = '2')")


def _log_landed(spark: Sql, files: list[tuple[str, Path, int]]) -> None:
    """One commit to the landing log for the files (table, path, rows) of a batch."""
    if files:
        rows, args = [], {}
        for n, (table, path, count) in enumerate(files):
            rows.append(f"(:t{n}, :f{n}, cast(:r{n} as bigint), current_timestamp())")
            args.update({f"t{n}": table, f"f{n}": str(path), f"r{n}": count})
        spark.sql(f"insert into {LANDED_FILES} values {', '.join(rows)}", args=args)


def _append(spark: Sql, path: Path, table: str) -> None:
    """Append one file to raw.<table> in one commit, in SQL only (a temporary view over the
    file, then an insert), so it runs the same on the embedded session and through a Thrift
    Server (which must see the file at the same path)."""
    columns = contract.TABLES[table]
    location = literal(str(path))
    if path.suffix.lower() == ".parquet":
        spark.sql(f"create or replace temporary view landing_file using parquet options (path {location})")
    else:
        ddl = ", ".join(f"{c.name} {c.spark_type}" for c in columns)
        spark.sql(f"create or replace temporary view landing_file ({ddl}) using csv"
                  f" options (path {location}, header 'true', mode 'FAILFAST')")
    try:
        casts = ", ".join(f"cast({c.name} as {c.spark_type}) as {c.name}" for c in columns)
        spark.sql(f"insert into {contract.RAW_SCHEMA}.{table} select {casts}, current_timestamp() as _loaded_at,"
                  " :f as _source_file from landing_file", args={"f": str(path)})
    finally:
        spark.sql("drop view if exists landing_file")


def land(spark: Sql, files: list[Path], table: str | None = None) -> list[LandedFile]:
    """Validate every file, then append each one; nothing is appended if any file is invalid."""
    if table is not None and table not in contract.TABLES:
        raise LandingError(f"--table {table!r} is not a raw table; expected one of {sorted(contract.TABLES)}")
    planned = []
    for path in files:
        path = Path(path).resolve()
        target = table or table_for(path)
        planned.append((path, target, validate(path, target)))
    ensure_raw_tables(spark)
    landed, unlogged = [], []
    for path, target, rows in planned:
        already = spark.sql(
            f"select 1 from {contract.RAW_SCHEMA}.{target} where _source_file = :f limit 1", args={"f": str(path)}
        ).collect()
        if already:
            # a crash between the append and its log entry leaves the file unlogged: log it now
            logged = spark.sql(f"select 1 from {LANDED_FILES} where table_name = :t and source_file = :f limit 1",
                               args={"t": target, "f": str(path)}).collect()
            if not logged:
                unlogged.append((target, path, rows))
            landed.append(LandedFile(path, target, 0, skipped=True))
            continue
        _append(spark, path, target)
        unlogged.append((target, path, rows))
        landed.append(LandedFile(path, target, rows))
    # after the appends: a crash in between leaves files unlogged, and landing them again logs them
    _log_landed(spark, unlogged)
    return landed

