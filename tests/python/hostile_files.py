"""Hostile files for the landing contract, generated with hypothesis (test_hostile_files.py, and
test_landing.py's Spark half).

A drawn file is a `HostileFile`: a declared raw table, rows of valid but hostile values (SQL,
quotes and separators in strings, unicode and control characters, null keys, each type's
extreme numbers and times), written as CSV or Parquet, with at most one mutation:
- benign ones the landing must accept, landing exactly the rows written: columns reordered, a
  BOM, CRLF line ends, and for Parquet the contract's types spelled otherwise (nanosecond,
  zoned or naive timestamps, a narrower decimal, a large or dictionary-encoded string, an
  all-null column typed null);
- bad ones it must refuse by a LandingError that names the file and the column: a column
  dropped, doubled or not in the contract, a value that does not fit its column (garbage text,
  one past the type's range, a digit past the decimal's scale or precision, an impossible date
  or time; in Parquet, the column written as text);
- a truncated file, which may still parse (a CSV cut at a line end): refused by name, or
  accepted.
`expected()` is what the append must read for an accepted file, in the contract's types.
How many files a run draws: LANDING_CASES (the fast test) and LANDING_SPARK_CASES (the landing
into tables); docs/guides/run-the-tests.md.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from pipeline import contract
from pipeline.contract import RawTable

BENIGN = ("none", "reorder", "bom", "crlf", "other_types", "null_typed")
BAD = ("drop", "double", "foreign", "bad_value")
MUTATIONS = BENIGN + BAD + ("truncate",)

HOSTILE_STRINGS = (
    "", " ", "NA", "NULL", "null", "N/A", "NaN", "'; drop table raw.orders; --", "${var}", "{{ x }}",
    'a "quoted" value', "it's", "back\\slash\\", "tab\tinside", "line\nbreak", "crlf\r\nbreak",
    "nul\x00byte", "bell\x07", "\u00e9t\u00e9 \u00fc\u00f1\u00ee\u00e7\u00f8d\u00e9 \U0001F600",
    "\u202eright-to-left", "\ufeffbom inside", "  padded  ", "1,2,3", "#comment", "=cmd|' /C calc'!A0",
    "x" * 5000,
)
TIMESTAMP_MIN, TIMESTAMP_MAX = datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59, 999999)
# text that parses as no value of a non-string column (Arrow's parser reads "0x10" as 16: not here)
GARBAGE = ("x", "NULL", "null", "NA", "1e999", "--1", "1 2", "'1'", "true false", "\u0661\u0662")


def hostile_settings(variable: str, default: int) -> settings:
    """A fixed, reproducible number of drawn files (derandomized: every run draws the same
    ones), raised for a longer run by the environment variable."""
    return settings(max_examples=int(os.environ.get(variable, default)), derandomize=True, database=None,
                    deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
                    print_blob=True)


@functools.cache
def tables() -> tuple[RawTable, ...]:
    """Every raw table the project declares (the examples' and any a team adds)."""
    return tuple(sorted(contract.load().tables.values(), key=lambda t: t.qualified_name))


def _values(kind: pa.DataType) -> st.SearchStrategy:
    """Valid values of an Arrow type of the contract, with its extremes."""
    if pa.types.is_integer(kind):
        bits = kind.bit_width
        low, high = -(2 ** (bits - 1)), 2 ** (bits - 1) - 1
        return st.one_of(st.integers(low, high), st.sampled_from((low, high, 0, -1)))
    if pa.types.is_string(kind):
        return st.one_of(st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
                         st.sampled_from(HOSTILE_STRINGS))
    if pa.types.is_timestamp(kind):
        return st.one_of(st.datetimes(TIMESTAMP_MIN, TIMESTAMP_MAX),
                         st.sampled_from((TIMESTAMP_MIN, TIMESTAMP_MAX, datetime(1970, 1, 1))))
    if pa.types.is_date(kind):
        return st.dates(date(1, 1, 1), date(9999, 12, 31))
    if pa.types.is_boolean(kind):
        return st.booleans()
    if pa.types.is_decimal(kind):
        bound = Decimal(10) ** (kind.precision - kind.scale) - Decimal(1).scaleb(-kind.scale)
        return st.decimals(-bound, bound, places=kind.scale, allow_nan=False, allow_infinity=False)
    if pa.types.is_floating(kind):
        return st.floats(allow_nan=False, allow_infinity=False, width=kind.bit_width)
    raise AssertionError(f"no values for {kind}")


def _bad_text(kind: pa.DataType) -> st.SearchStrategy:
    """Text that is no value of the (non-string) type: garbage, or one step past it."""
    past = []
    if pa.types.is_integer(kind):
        past = [str(2 ** (kind.bit_width - 1)), str(-(2 ** (kind.bit_width - 1)) - 1), "1.5"]
    elif pa.types.is_decimal(kind):
        past = ["1" * (kind.precision - kind.scale + 1), "0." + "1" * (kind.scale + 1)]
    elif pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        past = ["2025-02-30 10:00:00", "2025-13-01", "10000-01-01 00:00:00", "2025-01-01 25:00:00"]
    elif pa.types.is_boolean(kind):
        past = ["yes", "2", "t"]
    return st.sampled_from(GARBAGE + tuple(past))


@dataclass
class HostileFile:
    table: RawTable
    fmt: str  # csv or parquet
    rows: list[dict]
    mutation: str
    column: str | None = None  # the column a bad mutation touches
    order: list[str] = field(default_factory=list)  # the file's columns, in its order
    detail: object = None  # the mutation's draw (bad text, truncation point, the Parquet types)

    @property
    def name(self) -> str:
        return f"{self.table.source_name}__{self.table.name}.{self.fmt}"

    def write(self, folder: Path) -> Path:
        path = folder / self.name
        if self.fmt == "csv":
            path.write_bytes(self._csv())
        else:
            pq.write_table(self._arrow(), path)
        if self.mutation == "truncate":
            data = path.read_bytes()
            path.write_bytes(data[: int(len(data) * self.detail)])
        return path

    def expected(self) -> list[dict]:
        """The rows the landing must append for an accepted file (a benign mutation), in the
        contract's column order, as Arrow gives them back from the contract's types."""
        schema = self.table.arrow_schema()
        return pa.Table.from_pylist([{c: _utc(r[c]) for c in schema.names} for r in self.rows],
                                    schema=schema).to_pylist()

    def _csv(self) -> bytes:
        names = list(self.order)
        lines = [",".join(names)]
        for row in self.rows:
            cells = []
            for name in names:
                if self.mutation == "bad_value" and name == self.column and row is self.rows[0]:
                    cells.append(self.detail)
                else:
                    cells.append(_csv_cell(row.get(name)))
            lines.append(",".join(cells))
        ending = "\r\n" if self.mutation == "crlf" else "\n"
        text = ending.join(lines) + ending
        return (b"\xef\xbb\xbf" if self.mutation == "bom" else b"") + text.encode("utf-8")

    def _arrow(self) -> pa.Table:
        schema = self.table.arrow_schema()
        arrays, fields = [], []
        for name in self.order:
            kind = schema.field(name).type if name in schema.names else pa.string()
            values = [_utc(row.get(name)) for row in self.rows]
            if self.mutation == "other_types" and name in (self.detail or {}):
                kind = self.detail[name]
                if pa.types.is_dictionary(kind):
                    arrays.append(pa.array(values, pa.string()).dictionary_encode())
                    fields.append(pa.field(name, arrays[-1].type))
                    continue
                if pa.types.is_timestamp(kind) and kind.tz is None:
                    values = [v.replace(tzinfo=None) if v else v for v in values]
            if self.mutation == "null_typed" and name == self.column:
                kind = pa.null()
            if self.mutation == "bad_value" and name == self.column:
                # a value of another type: the whole column is written as text
                kind = pa.string()
                values = [self.detail] + [_csv_cell(v) for v in values[1:]]
            arrays.append(pa.array(values, kind))
            fields.append(pa.field(name, kind))
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def _utc(value: object) -> object:
    return value.replace(tzinfo=UTC) if isinstance(value, datetime) and value.tzinfo is None else value


def _csv_cell(value: object) -> str:
    """A value as a CSV field: null unquoted and empty, a string always quoted (so an empty
    string is "" and stays one), the rest in the form Arrow parses back exactly."""
    if value is None:
        return ""
    if isinstance(value, str):
        return '"' + value.replace('"', '""') + '"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.replace(tzinfo=None).isoformat(sep=" ")
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, float):
        return repr(value)
    return str(value)


@st.composite
def hostile_files(draw) -> HostileFile:
    table = draw(st.sampled_from(tables()))
    schema = table.arrow_schema()
    fmt = draw(st.sampled_from(("csv", "parquet")))
    row = st.fixed_dictionaries({f.name: st.one_of(st.none(), _values(f.type)) for f in schema})
    rows = draw(st.lists(row, max_size=6))
    mutation = draw(st.sampled_from(MUTATIONS))
    order = list(schema.names)
    hostile = HostileFile(table, fmt, rows, mutation, order=order)
    typed = [f for f in schema if not pa.types.is_string(f.type)]
    if mutation == "reorder":
        hostile.order = draw(st.permutations(order))
    elif mutation in ("bom", "crlf") and fmt == "parquet":
        hostile.mutation = "none"
    elif mutation == "drop":
        hostile.column = draw(st.sampled_from(order))
        hostile.order = [c for c in order if c != hostile.column]
    elif mutation == "double":
        hostile.column = draw(st.sampled_from(order))
        hostile.order = order + [hostile.column]
    elif mutation == "foreign":
        hostile.column = draw(st.sampled_from(("coupon", "Order_ID", "_loaded_at", "_source_file", "is deleted")))
        hostile.order = order + [hostile.column]
    elif mutation == "bad_value":
        if not rows:
            rows.append({name: None for name in order})
        target = draw(st.sampled_from(typed))
        hostile.column, hostile.detail = target.name, draw(_bad_text(target.type))
    elif mutation == "truncate":
        hostile.detail = draw(st.floats(0.0, 0.99))
    elif mutation == "other_types":
        if fmt == "csv":
            hostile.mutation = "none"
        else:
            hostile.detail = {f.name: draw(_other_type(f.type, [r[f.name] for r in rows])) for f in schema}
    elif mutation == "null_typed":
        if fmt == "csv":
            hostile.mutation = "none"
        else:
            hostile.column = draw(st.sampled_from(order))
            for r in rows:
                r[hostile.column] = None
    return hostile


@st.composite
def _other_type(draw, kind: pa.DataType, values: list) -> pa.DataType:
    """Another Arrow spelling of a contract type that holds the values exactly."""
    if pa.types.is_timestamp(kind):
        return draw(st.sampled_from((pa.timestamp("us", tz="Asia/Kolkata"), pa.timestamp("us"),
                                     pa.timestamp("ms", tz="UTC") if all(v is None or v.microsecond % 1000 == 0
                                                                         for v in values) else kind,
                                     pa.timestamp("ns", tz="UTC") if all(v is None or 1678 <= v.year <= 2261
                                                                         for v in values) else kind)))
    if pa.types.is_decimal(kind):
        digits = max((len(v.as_tuple().digits) for v in values if v is not None), default=1)
        return pa.decimal128(draw(st.integers(max(digits, kind.scale, 1), kind.precision)), kind.scale)
    if pa.types.is_string(kind):
        return draw(st.sampled_from((pa.large_string(), pa.dictionary(pa.int32(), pa.string()), kind)))
    return kind


def staged_leftovers(folder: Path) -> list[Path]:
    """Staged copies left beside the files of a folder (none once a landing is done)."""
    return sorted(folder.rglob(".landing-*"))
