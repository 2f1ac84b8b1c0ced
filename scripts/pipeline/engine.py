"""The SQL engine the Python tooling talks to: the dbt profile's target decides.

- `method: session` (the embedded default): the process's own SparkSession (`pipeline.spark`),
  which dbt-spark's session method reuses: one JVM for landing, dbt and the runner.
- `method: thrift` (the `cluster` target): a connection opened by dbt-spark's own connection
  manager from the same profile output (host, port, user, auth, server-side parameters) to the
  Spark Thrift Server or Kyuubi that dbt's models run on. No PySpark session exists in the
  process; the landing, the backfill runner's Iceberg calls (branches, fast-forward, rollback,
  metadata tables) and the control tables all go through that connection.

`ThriftSql` offers the small part of the SparkSession API the tooling uses: `sql(text, args)`
with named parameters (`:name`), `catalog.tableExists/databaseExists`, `table(name)
.columns` and `conf.set/unset`. Thrift has no server-side parameter binding, so parameters are
rendered as Spark SQL literals by `literal` (strings escaped: quotes and backslashes), after the
callers' own validation (`iceberg.checked_table`, `plan.check_run_id`, ...).
"""

from __future__ import annotations

import json
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any, Protocol

from pyspark.sql import Row

from pipeline import paths

_PARAMETER = re.compile(r"'(?:[^'\\]|\\.)*'|`[^`]*`|:([A-Za-z_][A-Za-z0-9_]*)")


class Sql(Protocol):
    """What the tooling needs of an engine: a SparkSession, or a ThriftSql (its statements, its
    session settings, whether a table exists, a table's columns)."""

    @property
    def conf(self) -> Any: ...

    @property
    def catalog(self) -> Any: ...

    def sql(self, text: str, /, args: dict[str, Any] | None = None) -> Any: ...

    def table(self, name: str, /) -> Any: ...


def united(selects: list[str], size: int) -> list[str]:
    """`selects` (each a whole select) united `size` a query: a read of many models that one query
    would plan all at once, whose planning grows faster than the plan (issue 81: 200 models' audits
    ran the driver out of memory, 5 a query took 48 s where 20 a query took 60)."""
    return [" union all ".join(selects[at : at + size]) for at in range(0, len(selects), size)]


def collected_at_once(spark: Sql, queries: list[str], readers: int = 2) -> list[Row]:
    """The rows of every one of `queries`, `readers` queries at once (threads: Spark plans each
    in the driver, and a Thrift session serves one thread), in the order of `queries`. Two: on
    two cores four at once were slower (issue 81)."""
    with ThreadPoolExecutor(readers) as pool:
        return [row for rows in pool.map(lambda query: spark.sql(query).collect(), queries) for row in rows]


def target() -> dict:
    """The rendered output of the profile's target (DBT_TARGET, else the profile's default)."""
    from pipeline.spark import render_profile

    paths.export_environment()
    return render_profile()


def uses_session() -> bool:
    return target().get("method") == "session"


def literal(value: Any) -> str:
    """A Spark SQL literal for a Python value; strings escaped so they cannot end the literal."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float | Decimal):
        return repr(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, datetime):  # an aware time in UTC, the session time zone of both targets
        naive = value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo else value
        return f"timestamp'{naive.isoformat(sep=' ')}'"
    if isinstance(value, date):
        return f"date'{value.isoformat()}'"
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    raise TypeError(f"no SQL literal for a {type(value).__name__} parameter")


def bind(text: str, args: dict[str, Any] | None) -> str:
    """`text` with every `:name` outside string literals and backquotes replaced by the literal of
    `args[name]`; a name missing from `args` is an error, as it is for spark.sql."""
    if not args:
        return text

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:  # a quoted literal or identifier: left as it is
            return match.group(0)
        if name not in args:
            raise KeyError(f"SQL parameter :{name} has no value")
        return literal(args[name])

    return _PARAMETER.sub(replace, text)


def _convert(value: Any, type_code: str) -> Any:
    """Thrift returns dates, timestamps, decimals and complex types as strings."""
    if not isinstance(value, str):
        return value
    kind = str(type_code).upper()
    if kind.startswith("DATE"):
        return date.fromisoformat(value)
    if kind.startswith("TIMESTAMP"):
        return datetime.fromisoformat(value)
    if kind.startswith("DECIMAL"):
        return Decimal(value)
    if kind.startswith(("MAP", "STRUCT", "ARRAY")):
        return json.loads(value)
    return value


class Result:
    """What `sql()` returns: the rows, already fetched (DDL and DML return none)."""

    def __init__(self, rows: list[Row]) -> None:
        self._rows = rows

    def collect(self) -> list[Row]:
        return list(self._rows)


class _Catalog:
    def __init__(self, sql: ThriftSql) -> None:
        self._sql = sql

    def databaseExists(self, schema: str) -> bool:  # noqa: N802 - SparkSession's API
        return any(row[0] == schema for row in self._sql.sql("show schemas").collect())

    def tableExists(self, name: str) -> bool:  # noqa: N802
        schema, _, table = name.rpartition(".")
        if not schema or not self.databaseExists(schema):
            return False
        return any(row.tableName == table for row in self._sql.sql(f"show tables in {schema}").collect())


class _Conf:
    def __init__(self, sql: ThriftSql) -> None:
        self._sql = sql

    def set(self, key: str, value: str) -> None:
        self._sql.sql(f"set {key}={value}")

    def unset(self, key: str) -> None:
        self._sql.sql(f"reset {key}")


class _Table:
    def __init__(self, sql: ThriftSql, name: str) -> None:
        rows = sql.sql(f"describe table {name}").collect()
        names = []
        for row in rows:
            if not row[0] or row[0].startswith("#"):
                break
            names.append(row[0])
        self.columns = names


class ThriftSql:
    """SQL through dbt-spark's connection to a Spark Thrift Server, one connection per thread
    (the backfill runner checkpoints and heartbeats from threads of its own)."""

    def __init__(self, output: dict) -> None:
        from dbt.adapters.spark.connections import SparkCredentials

        # rendered as text, a profile's `none` reads "None" (dbt's own renderer keeps it native)
        fields = {k: (None if v in ("None", "") else v) for k, v in output.items() if k not in ("type", "threads")}
        # and its numbers and booleans read as text: typed here as dbt's native rendering types them
        for name in ("port", "connect_retries", "connect_timeout", "poll_interval", "query_retries"):
            if isinstance(value := fields.get(name), str):
                fields[name] = int(value)
        for name in ("use_ssl", "retry_all"):
            if isinstance(value := fields.get(name), str):
                fields[name] = value.strip().lower() in ("true", "1", "yes")
        self.credentials = SparkCredentials.from_dict(fields)
        self._local = threading.local()
        self._opened: list[Any] = []
        self._lock = threading.Lock()
        self.catalog = _Catalog(self)
        self.conf = _Conf(self)

    def _handle(self) -> Any:
        handle = getattr(self._local, "handle", None)
        if handle is None:
            from dbt.adapters.contracts.connection import Connection, Identifier
            from dbt.adapters.spark.connections import SparkConnectionManager

            connection = Connection(type=Identifier("spark"), name="pipeline", credentials=self.credentials)
            handle = SparkConnectionManager.open(connection).handle
            self._local.handle = handle
            with self._lock:
                self._opened.append(handle)
        return handle

    def sql(self, text: str, args: dict[str, Any] | None = None) -> Result:
        cursor = self._handle().handle.cursor()  # PyHive's own cursor: a synchronous execute
        try:
            cursor.execute(bind(text, args))
            if not cursor.description:
                return Result([])
            names = [column[0] for column in cursor.description]
            types = [column[1] for column in cursor.description]
            try:
                fetched = cursor.fetchall()
            except TypeError:
                # DDL answers a result set without columns, which PyHive cannot iterate
                # (`create schema` through a Spark Thrift Server): no rows
                fetched = []
            return Result([Row(**{n: _convert(v, t) for n, v, t in zip(names, values, types)}) for values in fetched])
        finally:
            cursor.close()

    def table(self, name: str) -> _Table:
        return _Table(self, name)

    def close(self) -> None:
        with self._lock:
            for handle in self._opened:
                try:
                    handle.close()
                except Exception:  # noqa: BLE001 - closing a dead connection
                    pass
            self._opened.clear()
        self._local = threading.local()


@lru_cache(maxsize=1)
def get_engine() -> Sql:
    """The engine of the profile's target: the embedded SparkSession, or a ThriftSql."""
    output = target()
    if output.get("method") == "session":
        from pipeline.spark import get_spark

        return get_spark()
    return ThriftSql(output)
