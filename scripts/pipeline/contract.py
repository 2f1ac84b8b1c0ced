"""The raw landing contract: the tables of schema `raw` and the columns a landed file must have.

Each raw table also gets `_loaded_at timestamp` (ingestion time) and `_source_file string`,
stamped by the landing command, never read from the file.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

RAW_SCHEMA = "raw"
AUDIT_COLUMNS: tuple[tuple[str, str], ...] = (("_loaded_at", "timestamp"), ("_source_file", "string"))


@dataclass(frozen=True)
class Column:
    name: str
    spark_type: str

    @property
    def arrow_type(self) -> pa.DataType:
        return _ARROW_TYPES[self.spark_type]


_ARROW_TYPES: dict[str, pa.DataType] = {
    "bigint": pa.int64(),
    "int": pa.int32(),
    "string": pa.string(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "boolean": pa.bool_(),
    "decimal(12,2)": pa.decimal128(12, 2),
}


def _columns(spec: str) -> tuple[Column, ...]:
    return tuple(Column(*part.split(maxsplit=1)) for part in (p.strip() for p in spec.split(";")))


TABLES: dict[str, tuple[Column, ...]] = {
    "orders": _columns(
        "order_id bigint; customer_id bigint; channel string; status string;"
        " ordered_at timestamp; updated_at timestamp; is_deleted boolean"
    ),
    "order_items": _columns(
        "order_id bigint; order_item_id int; product_id bigint; quantity int;"
        " unit_price decimal(12,2); discount_amount decimal(12,2); updated_at timestamp;"
        " is_deleted boolean"
    ),
    "customers": _columns(
        "customer_id bigint; email string; country string; segment string;"
        " updated_at timestamp; is_deleted boolean"
    ),
    "products": _columns(
        "product_id bigint; product_name string; category string; unit_cost decimal(12,2);"
        " updated_at timestamp; is_deleted boolean"
    ),
}


def arrow_schema(table: str) -> pa.Schema:
    return pa.schema([pa.field(c.name, c.arrow_type) for c in TABLES[table]])


def create_table_sql(table: str) -> str:
    columns = [f"{c.name} {c.spark_type}" for c in TABLES[table]]
    columns += [f"{name} {spark_type}" for name, spark_type in AUDIT_COLUMNS]
    return (
        f"create table if not exists {RAW_SCHEMA}.{table} ({', '.join(columns)}) using iceberg "
        "partitioned by (days(updated_at)) tblproperties ('format-version' = '2')"
    )
