"""Building blocks for the tests: source versions by hand, landing, dbt, reading tables."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable
from datetime import UTC, datetime
from decimal import Decimal
from itertools import count
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import contract, iceberg, warehouse
from pipeline.land import land

_batch = count(1)
# bumped whenever the session's warehouse is emptied for another build (empty_warehouse, the main
# job's reset): a checkpoint taken before it belongs to a warehouse that was replaced since
_generation = [0]


def warehouse_replaced() -> None:
    """Note that the session's warehouse was emptied (dropped tables and views) for another build."""
    _generation[0] += 1


def ts(text: str) -> datetime:
    """'2025-01-02 10:00' -> an aware UTC datetime."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def order(order_id: int, ordered_at: str, updated_at: str | None = None, *, customer_id: int = 1,
          channel: str = "web", status: str = "placed", is_deleted: bool = False) -> dict:
    return {"order_id": order_id, "customer_id": customer_id, "channel": channel, "status": status,
            "ordered_at": ts(ordered_at), "updated_at": ts(updated_at or ordered_at), "is_deleted": is_deleted}


def item(order_id: int, order_item_id: int, updated_at: str, *, product_id: int = 1, quantity: int = 1,
         unit_price: str = "10.00", discount: str = "0.00", is_deleted: bool = False) -> dict:
    return {"order_id": order_id, "order_item_id": order_item_id, "product_id": product_id, "quantity": quantity,
            "unit_price": Decimal(unit_price), "discount_amount": Decimal(discount), "updated_at": ts(updated_at),
            "is_deleted": is_deleted}


def product(product_id: int, updated_at: str, *, unit_cost: str, name: str | None = None,
            category: str = "toys", is_deleted: bool = False) -> dict:
    return {"product_id": product_id, "product_name": name or f"Product {product_id}", "category": category,
            "unit_cost": Decimal(unit_cost), "updated_at": ts(updated_at), "is_deleted": is_deleted}


def customer(customer_id: int, updated_at: str, *, segment: str = "consumer", is_deleted: bool = False) -> dict:
    return {"customer_id": customer_id, "email": f"c{customer_id}@example.com", "country": "DE",
            "segment": segment, "updated_at": ts(updated_at), "is_deleted": is_deleted}


def trip(trip_id: int, picked_up_at: str, updated_at: str | None = None, *, driver_id: int | None = 7,
         fare: str = "20.00", city: str = "Berlin", is_deleted: bool = False) -> dict:
    """A version of a trip of the rides example."""
    return {"trip_id": trip_id, "driver_id": driver_id, "city": city, "picked_up_at": ts(picked_up_at),
            "distance_km": Decimal("5.00"), "fare_amount": Decimal(fare), "updated_at": ts(updated_at or picked_up_at),
            "is_deleted": is_deleted}


def driver(driver_id: int, updated_at: str, *, rate: str, is_deleted: bool = False) -> dict:
    """A version of a driver of the rides example (its commission rate effective from updated_at)."""
    return {"driver_id": driver_id, "driver_name": f"Driver {driver_id}", "vehicle_class": "standard",
            "commission_rate": Decimal(rate), "updated_at": ts(updated_at), "is_deleted": is_deleted}


def write_parquet(path: Path, table: str, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=contract.load().table(table).arrow_schema()), path)
    return path


def last_invocation_statements() -> list[str]:
    """The statements of this process's latest dbt invocation, as dbt logged them, each starting
    with its query comment's JSON (`"node_id": "model.<project>.<model>"` names the model that ran
    it). The log file holds every invocation; dbt rotates it at 10 MB into dbt.log.1, .2, ...:
    read them oldest first."""
    logs = Path(os.environ["PIPELINE_STATE_DIR"]) / "logs"
    rotated = sorted(logs.glob("dbt.log.*"), key=lambda p: -int(p.suffix[1:]) if p.suffix[1:].isdigit() else 0)
    log = "".join(p.read_text() for p in [*rotated, logs / "dbt.log"])
    return log[log.rindex("Running with dbt="):].split("/* {")[1:]


def empty_warehouse(spark, keep: tuple[str, ...] = ("reference",)) -> None:
    """`warehouse.reset` for the tests: the same tables and views dropped, but without `purge`.
    An Iceberg `drop table ... purge` runs Spark jobs that read every manifest of the table's
    history to delete its files (seconds a table); the tests' warehouse lives in a temporary
    folder, so the dropped tables' files are simply left there, unreferenced. (warehouse.reset
    itself is what the main job runs: test_main_job.)"""
    warehouse_replaced()
    for relation in warehouse.relations(spark, tuple(s for s in warehouse.SCHEMAS if s not in keep)):
        spark.sql(f"drop {'view' if relation.is_view else 'table'} if exists {relation}")


SELECTING = {"--select", "-s", "--exclude", "--selector"}  # dbt's own selection flags


@dataclass
class Warehouse:
    spark: object
    dbt: object
    files: Path
    # what `dbt_run()` / `dbt_build()` select when they are given no selection of their own: a
    # module that tests one example domain leaves the other's models out of its runs (they are
    # built, empty, by the module's first build, so every tool still finds their tables)
    selection: tuple[str, ...] = ()

    @classmethod
    def empty(cls, spark, dbt, files: Path, selection: tuple[str, ...] = ()) -> "Warehouse":
        """No tables but the reference seeds (`dbt run` does not load seeds; they are static, so
        they are kept from one test to the next rather than loaded again)."""
        empty_warehouse(spark)
        if not spark.catalog.tableExists("reference.channels"):
            dbt.invoke("seed")
        return cls(spark, dbt, files, selection)

    # -- writing ---------------------------------------------------------------------------
    def land(self, **tables: list[dict]) -> None:
        """Land one batch: one Parquet file per table given (orders=[...], order_items=[...])."""
        batch = self.files / f"batch-{next(_batch):04d}"
        land(self.spark, [write_parquet(batch / f"{name}.parquet", name, rows) for name, rows in tables.items()])

    def dbt_run(self, *args: str):
        return self.dbt.invoke("run", *self._selected(args))

    def dbt_build(self, *args: str):
        return self.dbt.invoke("build", *self._selected(args))

    def build_all(self):
        """`dbt run` of every model of the project, whatever the warehouse's selection."""
        return self.dbt.invoke("run")

    def _selected(self, args: tuple[str, ...]) -> tuple[str, ...]:
        return args if SELECTING & set(args) else (*self.selection, *args)

    # -- reading ---------------------------------------------------------------------------
    def rows(self, sql: str) -> list:
        return self.spark.sql(sql).collect()

    def table(self, name: str) -> list[tuple]:
        """Every row of a table, as sorted tuples (for whole-table comparisons)."""
        return sorted(tuple(row) for row in self.spark.sql(f"select * from {name}").collect())

    def fact_lines(self) -> dict[tuple[int, int], object]:
        return {(r.order_id, r.order_item_id): r for r in self.rows("select * from marts.fct_order_item")}

    def watermark(self, pipeline: str):
        return iceberg.watermarks(self.spark).get(pipeline)

    def snapshot_id(self, table: str) -> int | None:
        return iceberg.current_snapshot_id(self.spark, table)

    def files_by_partition(self, table: str) -> dict[object, set[str]]:
        found: dict[object, set[str]] = {}
        for row in self.rows(f"select partition, file_path from {table}.files"):
            found.setdefault(tuple(row.partition), set()).add(row.file_path)
        return found

    # -- sharing one built warehouse between tests -------------------------------------------
    def views(self) -> list[str]:
        return [str(r) for r in warehouse.relations(self.spark) if r.is_view]

    def checkpoint(self) -> "Checkpoint":
        """Every Iceberg table's current metadata file, for `restore` after a test changed them,
        with the names of the metadata files its folder held then (how `restore` tells the
        tables a test left alone); and every view's statement."""
        tables, views = {}, {}
        for relation in warehouse.relations(self.spark):  # one listing: 0.4 s
            name = str(relation)
            if relation.is_view:
                views[name] = self.rows(f"show create table {name}")[0][0]
            else:
                current = self.rows(f"select file from {name}.metadata_log_entries order by timestamp desc limit 1")[0].file
                tables[name] = (current, _metadata_files(current))
        return Checkpoint(tables, views, _generation[0])

    def restore(self, checkpoint: "Checkpoint") -> None:
        """Put every Iceberg table back exactly as `checkpoint` found it, instead of building the
        warehouse again: the tables created since are dropped with their files, and every table
        of the checkpoint that changed (its folder holds a metadata file it did not hold then:
        every Iceberg commit writes one, a table dropped and created again too) or was dropped is
        dropped (without purge: the checkpoint's snapshots still use its files) and registered
        again from the metadata file it had then (and `checkpoint` notes the folder as it is
        after that, so an untouched table is passed by next time too). An Iceberg metadata file is the whole table:
        snapshots and their history, branches, schema, properties. Files written since are left
        unreferenced in the test's temporary folder. Views need nothing while this warehouse is
        the session's (dbt creates them with the same SQL on every run); when another build
        replaced it since the checkpoint (`warehouse_replaced`), every view is created again as
        the checkpoint found it."""
        self.spark.conf.unset("spark.wap.branch")
        listed = warehouse.relations(self.spark)  # one listing: registering tables changes no view
        present = {str(r) for r in listed if not r.is_view}
        for name in present - set(checkpoint.tables):
            self.spark.sql(f"drop table {name} purge")
        for name, (metadata_file, files) in checkpoint.tables.items():
            if name in present and files and _metadata_files(metadata_file) == files:
                continue  # no commit since the checkpoint: the table is as it was
            self.spark.sql(f"drop table if exists {name}")
            self.spark.sql(f"call spark_catalog.system.register_table(table => '{name}', metadata_file => '{metadata_file}')")
            # registering writes no metadata file: the folder as it is now is this table unchanged,
            # so the next restore passes it by unless another commit comes
            checkpoint.tables[name] = (metadata_file, _metadata_files(metadata_file))
        if checkpoint.generation != _generation[0]:
            for view in (r for r in listed if r.is_view):
                self.spark.sql(f"drop view {view}")
            _create_views(self.spark, checkpoint.views)
            checkpoint.generation = _generation[0]


def _create_views(spark, views: dict[str, str]) -> None:
    """Create the views from their statements, each after the views it reads (Spark analyses a
    view's query when it is created): the ones whose reads are missing wait for the next round."""
    waiting = dict(views)
    while waiting:
        failed: dict[str, tuple[str, Exception]] = {}
        for name, statement in waiting.items():
            try:
                spark.sql(statement)
            except Exception as error:  # noqa: BLE001 - a view it reads is not created yet
                failed[name] = (statement, error)
        if len(failed) == len(waiting):
            raise RuntimeError(f"cannot create the views {sorted(failed)} again: "
                               f"{next(iter(failed.values()))[1]}")
        waiting = {name: statement for name, (statement, _) in failed.items()}


@dataclass
class Checkpoint:
    """A built warehouse as `Warehouse.checkpoint` found it (what `Warehouse.restore` puts back)."""
    tables: dict[str, tuple[str, frozenset[str]]]  # Iceberg table -> (metadata file, its folder's files)
    views: dict[str, str]  # view -> the statement that creates it
    generation: int  # the session's warehouse generation (`warehouse_replaced`) then

    def intact(self) -> bool:
        """Whether every table's metadata file still exists: a purge (the main job's reset drops
        every table with its files) deletes it, and the checkpoint can then no longer be restored."""
        return all(Path(urlparse(file).path).exists() for file, _ in self.tables.values()
                   if urlparse(file).scheme in ("", "file"))


class SharedBuild:
    """A warehouse built once and shared by the tests of one module or of several (a session
    fixture): `fresh()` before each test puts it back as the build left it (`Warehouse.restore`),
    or builds it again when the build was purged since (`Checkpoint.intact`)."""

    def __init__(self, build: Callable[[], Warehouse]):
        self._build = build
        self._built: tuple[Warehouse, Checkpoint] | None = None
        self.builds = 0  # how many times it was built: once, unless purged in between

    def fresh(self) -> Warehouse:
        if self._built is None or not self._built[1].intact():
            warehouse = self._build()
            self._built = (warehouse, warehouse.checkpoint())
            self.builds += 1
        else:
            self._built[0].restore(self._built[1])
        return self._built[0]


def _metadata_files(metadata_file: str) -> frozenset[str]:
    """The names of the metadata files beside `metadata_file` (a table's metadata folder); empty
    when that folder is not on the local file system (then `restore` registers the table again)."""
    parsed = urlparse(metadata_file)
    if parsed.scheme not in ("", "file"):
        return frozenset()
    folder = Path(parsed.path).parent
    return frozenset(p.name for p in folder.glob("*.metadata.json")) if folder.is_dir() else frozenset()


SHOP_MARTS = ("fct_order_item", "fct_orders", "dim_customer", "dim_product", "dim_channel", "dim_date",
              "agg_daily_revenue", "agg_customer_orders")


def mart_checksums(query) -> dict[str, tuple]:
    """Per shop mart, its row count and an order-independent checksum of every column; and the
    shop marts' watermarks. `query(sql)` returns rows as tuples (a Spark session's or a Thrift
    Server's)."""
    sums = {t: tuple(query(f"select count(*), cast(coalesce(sum(cast(xxhash64(*) as decimal(38, 0))), 0) as string)"
                           f" from marts.{t}")[0]) for t in SHOP_MARTS}
    shop = ", ".join(f"'{t}'" for t in SHOP_MARTS)
    sums["watermarks"] = tuple(tuple(str(v) for v in row) for row in query(
        f"select pipeline_name, watermark_ts from control.etl_watermark where pipeline_name in ({shop})"
        " order by pipeline_name"))
    return sums


# the README's main job on its small sample: read by test_main_job (what it prints, the marts'
# columns) and by test_cluster (the same job on the cluster must leave the same marts)
MAIN_JOB_SAMPLE = {"days": 3, "orders_per_day": 25}


@dataclass(frozen=True)
class MainJobRun:
    """The main job's sample run on the embedded Spark, as it left the warehouse."""
    exit_code: int
    output: str  # what it printed
    checksums: dict[str, tuple]  # mart_checksums right after it
    columns: dict[str, list[str]]  # each shop mart's table columns


def scope_relations(model: str, tables: tuple[str, ...] = ()) -> dict[str, str]:
    """The session's temporary views the model's last incremental run read its scope from
    (scope_keys_cached), as its staged rows to merge name them in the latest invocation: `keys`,
    and the versions of each landed table of `tables` ('<source>.<table>'). The invocation's
    shared views (`scope_shared_*`) when the run's keys were the shared ones, else the model's own
    (`scope_keys__<model>`, `scope_versions__<source>__<table>__<model>`)."""
    [staged] = [s for s in last_invocation_statements() if f"create table scratch.{model}__merge_source_" in s]
    found = {"keys": re.search(rf"\bfrom (scope_keys__{model}|scope_shared_changed__\w+)\b", staged).group(1)}
    for name in tables:
        source, table = name.split(".")
        found[name] = re.search(rf"\b(scope_versions__{source}__{table}__{model}"
                                rf"|scope_shared_versions_{source}_{table}__\w+)\b", staged).group(1)
    return found


def shared_scope_views(wh: "Warehouse") -> list[str]:
    """The session's temporary views of a run's shared scope (scope_shared_cache), sorted."""
    return sorted(row.viewName for row in wh.rows("show views like 'scope_shared_*'") if row.isTemporary)
