"""The landing contract: the raw tables `pipeline land` appends to, with their columns and types.

It is declared once, in the dbt project's sources yml, and read here from dbt's manifest: a
source table is a landed raw table when its config carries a `backfill_safe` block, e.g.

    tables:
      - name: orders
        config:
          meta:
            backfill_safe:
              unique_key: [order_id]
              quarantine:              # optional, in order (macro quarantine_reason)
                - not_null: ordered_at
                - non_negative: quantity
                - reject_if: coalesce(discount_amount, 0) > quantity * unit_price
                  reason: discount above the gross
        columns:
          - name: order_id
            data_type: bigint
          ...

Every column declares a `data_type`. Every landed table has its update time (the source's
`loaded_at_field`, a timestamp), `is_deleted boolean`, and the two columns the landing stamps,
never read from a file: `_loaded_at timestamp` (ingestion time) and `_source_file string`.
A new raw table, or a second source system, needs a yml entry and no Python edit.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from pipeline import paths

AUDIT_COLUMNS: tuple[tuple[str, str], ...] = (("_loaded_at", "timestamp"), ("_source_file", "string"))
# The landed file's path kept whole in each data file's column metrics (Iceberg keeps the first
# 16 characters by default, a folder's common prefix): the landing's already-landed check
# (`_source_file = <path>`) then reads only the data files holding that path, not every file the
# table ever landed, and through a Thrift Server Iceberg's check of two landings committing to one
# table at once (land.py: a MERGE on `_source_file`) tells their files apart.
SOURCE_FILE_METRICS = "write.metadata.metrics.column._source_file"  # set to "full"
DELETED_FLAG = "is_deleted"
QUARANTINE_KINDS = ("not_null", "non_negative", "reject_if")

_SIMPLE_TYPES: dict[str, pa.DataType] = {
    "bigint": pa.int64(),
    "long": pa.int64(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "smallint": pa.int16(),
    "short": pa.int16(),
    "tinyint": pa.int8(),
    "byte": pa.int8(),
    "string": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "date": pa.date32(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "float": pa.float32(),
}
_DECIMAL = re.compile(r"decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ContractError(ValueError):
    """The sources yml declares a landed table the landing cannot honour, or none at all."""


def arrow_type(spark_type: str) -> pa.DataType | None:
    """The Arrow type of a Spark SQL type name of the contract, or None if unsupported."""
    normal = spark_type.strip().lower()
    if normal in _SIMPLE_TYPES:
        return _SIMPLE_TYPES[normal]
    match = _DECIMAL.fullmatch(normal)
    if match and 0 < int(match.group(1)) <= 38 and int(match.group(2)) <= int(match.group(1)):
        return pa.decimal128(int(match.group(1)), int(match.group(2)))
    return None


@dataclass(frozen=True)
class Column:
    name: str
    spark_type: str

    @property
    def arrow_type(self) -> pa.DataType:
        found = arrow_type(self.spark_type)
        assert found is not None, self  # checked when the contract was read
        return found


@dataclass(frozen=True)
class RawTable:
    source_name: str
    name: str
    schema: str
    identifier: str
    columns: tuple[Column, ...]  # a file's columns: every declared column but the audit ones
    unique_key: tuple[str, ...]
    update_column: str

    @property
    def qualified_name(self) -> str:
        """source.table, as the landing log and the quarantine view name it."""
        return f"{self.source_name}.{self.name}"

    @property
    def relation(self) -> str:
        return f"{self.schema}.{self.identifier}"

    def arrow_schema(self) -> pa.Schema:
        return pa.schema([pa.field(c.name, c.arrow_type) for c in self.columns])

    def create_table_sql(self) -> str:
        columns = [f"{c.name} {c.spark_type}" for c in self.columns]
        columns += [f"{name} {spark_type}" for name, spark_type in AUDIT_COLUMNS]
        return (
            f"create table if not exists {self.relation} ({', '.join(columns)}) using iceberg "
            f"partitioned by (days({self.update_column})) tblproperties ('format-version' = '2', "
            f"'{SOURCE_FILE_METRICS}' = 'full')"
        )


@dataclass(frozen=True)
class Contract:
    tables: dict[str, RawTable]  # by qualified name, source.table

    def names(self) -> list[str]:
        """Every landed table, by the shortest name that is unambiguous (table, else source.table)."""
        bare = [t.name for t in self.tables.values()]
        return sorted(t.name if bare.count(t.name) == 1 else t.qualified_name for t in self.tables.values())

    def table(self, name: str) -> RawTable:
        """A landed table by `source.table`, or by `table` when one source alone has it."""
        if name in self.tables:
            return self.tables[name]
        matches = [t for t in self.tables.values() if t.name == name]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise ContractError(
                f"table {name!r} is landed by several sources; name one of {sorted(t.qualified_name for t in matches)}"
            )
        raise ContractError(
            f"{name!r} is not a landed raw table; expected one of {self.names()} "
            "(a source table declares config.meta.backfill_safe in its sources yml)"
        )

    def schemas(self) -> list[str]:
        return sorted({t.schema for t in self.tables.values()})

    @classmethod
    def from_manifest(cls, manifest: dict) -> Contract:
        tables = {}
        for node in manifest.get("sources", {}).values():
            config = node.get("config") or {}
            block = (config.get("meta") or {}).get("backfill_safe", (node.get("meta") or {}).get("backfill_safe"))
            if block is None:
                continue
            table = _raw_table(node, block)
            tables[table.qualified_name] = table
        if not tables:
            raise ContractError(
                "no source of the dbt project declares a landed raw table: give a source table "
                "config.meta.backfill_safe (unique_key, quarantine) in its sources yml"
            )
        return cls(tables)


def _raw_table(node: dict, block: object) -> RawTable:
    where = f"{node.get('original_file_path', 'sources yml')}: source {node['source_name']}.{node['name']}"
    if not isinstance(block, dict):
        raise ContractError(f"{where}: backfill_safe must be a mapping (unique_key, quarantine), not {block!r}")
    unknown = sorted(set(block) - {"unique_key", "quarantine"})
    if unknown:
        raise ContractError(f"{where}: backfill_safe has no key {unknown[0]!r} (keys: unique_key, quarantine)")
    for name in (node["source_name"], node["name"], node["schema"], node.get("identifier") or node["name"]):
        if not _IDENTIFIER.fullmatch(name):
            raise ContractError(f"{where}: {name!r} is not a plain identifier")
    declared: dict[str, str] = {}
    for name, column in (node.get("columns") or {}).items():
        spark_type = column.get("data_type")
        if not spark_type:
            raise ContractError(f"{where}: column {name!r} declares no data_type")
        if not _IDENTIFIER.fullmatch(name):
            raise ContractError(f"{where}: column {name!r} is not a plain identifier")
        if arrow_type(spark_type) is None:
            raise ContractError(
                f"{where}: column {name!r} has data_type {spark_type!r}, which the landing does not "
                f"support (one of {sorted(_SIMPLE_TYPES)} or decimal(p,s))"
            )
        declared[name] = spark_type.strip().lower()
    update_column = node.get("loaded_at_field") or (node.get("config") or {}).get("loaded_at_field") or "updated_at"
    required = {update_column: "timestamp", DELETED_FLAG: "boolean", **dict(AUDIT_COLUMNS)}
    for name, spark_type in required.items():
        if name not in declared:
            raise ContractError(
                f"{where}: column {name!r} ({spark_type}) is missing; every landed table has its "
                f"update time (loaded_at_field), {DELETED_FLAG} and the landing's "
                f"{', '.join(n for n, _ in AUDIT_COLUMNS)}"
            )
        if declared[name] != spark_type:
            raise ContractError(f"{where}: column {name!r} must be {spark_type}, not {declared[name]}")
    unique_key = block.get("unique_key")
    if isinstance(unique_key, str):
        unique_key = [unique_key]
    if not unique_key or not isinstance(unique_key, list):
        raise ContractError(f"{where}: backfill_safe.unique_key is missing (the columns that identify one entity)")
    for key in unique_key:
        if key not in declared:
            raise ContractError(f"{where}: unique_key column {key!r} is not declared")
    for rule in block.get("quarantine") or []:
        kinds = [k for k in (rule if isinstance(rule, dict) else {}) if k != "reason"]
        if len(kinds) != 1 or kinds[0] not in QUARANTINE_KINDS:
            raise ContractError(
                f"{where}: quarantine rule {rule!r} is not one of not_null: COLUMN, "
                "non_negative: COLUMN, reject_if: SQL (with reason: TEXT)"
            )
        if kinds[0] == "reject_if":
            if not rule.get("reason"):
                raise ContractError(f"{where}: quarantine rule {rule!r} needs a reason")
        elif rule[kinds[0]] not in declared:
            raise ContractError(
                f"{where}: quarantine rule {kinds[0]} names column {rule[kinds[0]]!r}, which is not declared"
            )
    audit = {name for name, _ in AUDIT_COLUMNS}
    return RawTable(
        source_name=node["source_name"],
        name=node["name"],
        schema=node["schema"],
        identifier=node.get("identifier") or node["name"],
        columns=tuple(Column(n, t) for n, t in declared.items() if n not in audit),
        unique_key=tuple(unique_key),
        update_column=update_column,
    )


_cache: dict[Path, tuple[float, Contract]] = {}


def _stale(manifest: Path) -> bool:
    """The manifest is missing, or older than a yml of the project's models (a source declared
    or changed since dbt last parsed)."""
    if not manifest.is_file():
        return True
    written = manifest.stat().st_mtime
    return any(yml.stat().st_mtime > written for yml in (paths.PROJECT_DIR / "models").rglob("*.yml"))


def load(manifest_path: Path | None = None) -> Contract:
    """The contract of the project's manifest (dbt's target folder). Without a manifest path,
    the project is parsed first (`dbt parse`, in this process) when its manifest is missing or
    older than a models yml, so the contract is always the sources yml as it is now."""
    path = manifest_path or paths.target_dir() / "manifest.json"
    if manifest_path is None and _stale(path):
        from pipeline.dbt import parse_project

        parse_project()
    if not path.is_file():
        raise ContractError(f"{path} does not exist: parse the project first (dbt parse)")
    mtime = path.stat().st_mtime
    cached = _cache.get(path)
    if cached and cached[0] == mtime:
        return cached[1]
    contract = Contract.from_manifest(json.loads(path.read_text()))
    _cache[path] = (mtime, contract)
    return contract
