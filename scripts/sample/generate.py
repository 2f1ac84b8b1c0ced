"""A seeded generator of source-system versions, one folder of files per landing day.

It simulates the order system day by day and writes, for each day, the versions that reached
the landing zone that day: `<out>/<YYYY-MM-DD>/<table>.parquet` (or .csv). Besides new
customers, products, orders and lines, every day after the first carries (each rate is a share
of the eligible entities, and a positive rate means at least one per day):
- late corrections: new versions of lines of older orders (old ordered_at, new updated_at),
  some stamped a day or two before the day they land (late-arriving);
- header-only changes (status or channel of an existing order, lines untouched);
- ordered_at corrections (moves an order to another date);
- out-of-order versions: an older version of an entity landing after its newer one;
- duplicates: exact copies of versions landed again;
- deletions of lines and of whole orders;
- new product versions (price/cost changes) and customer changes.
The same seed and options give the same rows.
"""

from __future__ import annotations

import argparse
import csv
import random
from dataclasses import asdict, dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline import contract

# the shop example's source and its raw tables; their columns and types are the landing
# contract the sources yml declares (contract.load)
SOURCE = "shop"
TABLES = ("orders", "order_items", "customers", "products")
CHANNELS = ("web", "app", "store", "phone", "marketplace")
STATUSES = ("placed", "shipped", "completed")
CATEGORIES = ("books", "games", "garden", "kitchen", "toys", "tools")
COUNTRIES = ("DE", "FR", "NL", "SE", "US", "GB", "ES")
SEGMENTS = ("consumer", "small_business", "enterprise")
CENT = Decimal("0.01")


@dataclass(frozen=True)
class GeneratorConfig:
    seed: int = 42
    start_date: date = date(2025, 1, 1)
    days: int = 14
    orders_per_day: int = 100
    products: int = 40
    initial_customers: int = 150
    new_customers_per_day: int = 5
    late_correction_rate: float = 0.01
    late_arrival_rate: float = 0.03
    header_change_rate: float = 0.01
    ordered_at_correction_rate: float = 0.002
    out_of_order_rate: float = 0.002
    duplicate_rate: float = 0.01
    delete_rate: float = 0.002
    product_change_rate: float = 0.05
    customer_change_rate: float = 0.01
    correction_max_age_days: int = 30
    file_format: str = "parquet"

    def __post_init__(self) -> None:
        if self.days < 1 or self.orders_per_day < 1 or self.products < 1 or self.initial_customers < 1:
            raise ValueError("days, orders_per_day, products and initial_customers must be >= 1")
        for name, value in asdict(self).items():
            if name.endswith("_rate") and not 0 <= value <= 1:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if self.file_format not in ("parquet", "csv"):
            raise ValueError(f"file_format must be parquet or csv, got {self.file_format!r}")


@dataclass
class _Day:
    rows: dict[str, list[dict]] = field(default_factory=lambda: {t: [] for t in TABLES})

    def emit(self, table: str, version: dict) -> None:
        self.rows[table].append(dict(version))


class _Source:
    """The order system: current versions of every entity, changed day by day."""

    def __init__(self, config: GeneratorConfig) -> None:
        self.config = config
        self.rng = random.Random(config.seed)
        self.customers: dict[int, dict] = {}
        self.products: dict[int, dict] = {}
        self.list_prices: dict[int, Decimal] = {}
        self.orders: dict[int, dict] = {}
        self.items: dict[tuple[int, int], dict] = {}
        self.deleted_orders: set[int] = set()
        self.next_order_id = 1000
        self.next_customer_id = 1
        self.held_back: list[tuple[str, dict]] = []

    # -- helpers ---------------------------------------------------------------------------
    def _moment(self, day: date, earliest: datetime | None = None) -> datetime:
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)
        moment = start + timedelta(seconds=self.rng.randrange(0, 86_400), microseconds=self.rng.randrange(0, 1_000_000))
        if earliest is not None and moment <= earliest:
            moment = earliest + timedelta(seconds=self.rng.randrange(1, 600))
        return moment

    def _count(self, rate: float, pool: int) -> int:
        if rate <= 0 or pool == 0:
            return 0
        return min(pool, max(1, round(rate * pool)))

    def _new_customer(self, day: _Day, when: datetime) -> None:
        customer_id = self.next_customer_id
        self.next_customer_id += 1
        version = {
            "customer_id": customer_id,
            "email": f"customer{customer_id}@example.com",
            "country": self.rng.choice(COUNTRIES),
            "segment": self.rng.choice(SEGMENTS),
            "updated_at": when,
            "is_deleted": False,
        }
        self.customers[customer_id] = version
        day.emit("customers", version)

    def _line_amounts(self, product_id: int, quantity: int) -> tuple[Decimal, Decimal]:
        unit_price = (self.list_prices[product_id] * Decimal(self.rng.uniform(0.9, 1.1))).quantize(CENT)
        gross = unit_price * quantity
        discount = Decimal(0) if self.rng.random() < 0.7 else (gross * Decimal(self.rng.choice((5, 10, 15))) / 100).quantize(CENT)
        return unit_price, discount

    # -- one day ---------------------------------------------------------------------------
    def simulate(self, index: int) -> _Day:
        config = self.config
        today = config.start_date + timedelta(days=index)
        day = _Day()
        for table, version in self.held_back:
            day.emit(table, version)
        self.held_back = []

        if index == 0:
            before = datetime(today.year, today.month, today.day, tzinfo=UTC) - timedelta(days=30)
            for product_id in range(1, config.products + 1):
                self.list_prices[product_id] = Decimal(self.rng.randrange(300, 20_000)) / 100
                version = {
                    "product_id": product_id,
                    "product_name": f"Product {product_id}",
                    "category": self.rng.choice(CATEGORIES),
                    "unit_cost": (self.list_prices[product_id] * Decimal("0.6")).quantize(CENT),
                    "updated_at": before + timedelta(minutes=product_id),
                    "is_deleted": False,
                }
                self.products[product_id] = version
                day.emit("products", version)
            for _ in range(config.initial_customers):
                self._new_customer(day, before + timedelta(minutes=self.next_customer_id))
        else:
            for _ in range(config.new_customers_per_day):
                self._new_customer(day, self._moment(today))
            self._change_products(day, today)
            self._change_customers(day, today)
            self._correct_lines(day, today)
            self._change_headers(day, today)
            self._move_orders(day, today)
            self._delete(day, today)
            self._out_of_order(day, today)
        self._new_orders(day, today, hold_back=index < config.days - 1)
        if index > 0:
            self._duplicate(day)
        return day

    def _new_orders(self, day: _Day, today: date, hold_back: bool) -> None:
        customer_ids = sorted(self.customers)
        for _ in range(self.config.orders_per_day):
            order_id = self.next_order_id
            self.next_order_id += 1
            ordered_at = self._moment(today)
            order = {
                "order_id": order_id,
                "customer_id": self.rng.choice(customer_ids),
                "channel": self.rng.choice(CHANNELS),
                "status": "placed",
                "ordered_at": ordered_at,
                "updated_at": ordered_at,
                "is_deleted": False,
            }
            lines = []
            for order_item_id in range(1, self.rng.randint(1, 4) + 1):
                product_id = self.rng.randint(1, self.config.products)
                quantity = self.rng.randint(1, 5)
                unit_price, discount = self._line_amounts(product_id, quantity)
                lines.append({
                    "order_id": order_id,
                    "order_item_id": order_item_id,
                    "product_id": product_id,
                    "quantity": quantity,
                    "unit_price": unit_price,
                    "discount_amount": discount,
                    "updated_at": ordered_at,
                    "is_deleted": False,
                })
            self.orders[order_id] = order
            for line in lines:
                self.items[(order_id, line["order_item_id"])] = line
            # a late-arriving order: written today, lands tomorrow
            late = hold_back and self.rng.random() < self.config.late_arrival_rate
            for table, version in [("orders", order)] + [("order_items", line) for line in lines]:
                if late:
                    self.held_back.append((table, dict(version)))
                else:
                    day.emit(table, version)

    def _live_orders(self, older_than: date) -> list[int]:
        return [
            order_id for order_id, order in self.orders.items()
            if order_id not in self.deleted_orders and order["ordered_at"].date() < older_than
        ]

    def _change_products(self, day: _Day, today: date) -> None:
        for product_id in self.rng.sample(sorted(self.products), self._count(self.config.product_change_rate, len(self.products))):
            version = dict(self.products[product_id])
            version["unit_cost"] = (version["unit_cost"] * Decimal(self.rng.uniform(0.9, 1.1))).quantize(CENT)
            version["updated_at"] = self._moment(today, earliest=version["updated_at"])
            self.products[product_id] = version
            day.emit("products", version)

    def _change_customers(self, day: _Day, today: date) -> None:
        for customer_id in self.rng.sample(sorted(self.customers), self._count(self.config.customer_change_rate, len(self.customers))):
            version = dict(self.customers[customer_id])
            version["segment"] = self.rng.choice(SEGMENTS)
            version["updated_at"] = self._moment(today, earliest=version["updated_at"])
            self.customers[customer_id] = version
            day.emit("customers", version)

    def _correct_lines(self, day: _Day, today: date) -> None:
        horizon = today - timedelta(days=self.config.correction_max_age_days)
        candidates = [
            key for key, line in self.items.items()
            if not line["is_deleted"] and key[0] not in self.deleted_orders
            and horizon <= self.orders[key[0]]["ordered_at"].date() < today
        ]
        for key in self.rng.sample(sorted(candidates), self._count(self.config.late_correction_rate, len(candidates))):
            line = dict(self.items[key])
            line["quantity"] = max(1, line["quantity"] + self.rng.choice((-1, 1, 2)))
            line["discount_amount"] = min(line["discount_amount"], line["unit_price"] * line["quantity"])
            # some corrections were made a day or two ago and arrive only now (late-arriving)
            stamped = today - timedelta(days=self.rng.choice((0, 0, 1, 2)))
            line["updated_at"] = self._moment(stamped, earliest=line["updated_at"])
            self.items[key] = line
            day.emit("order_items", line)

    def _change_headers(self, day: _Day, today: date) -> None:
        candidates = sorted(self._live_orders(today))
        for order_id in self.rng.sample(candidates, self._count(self.config.header_change_rate, len(candidates))):
            order = dict(self.orders[order_id])
            if order["status"] != "completed" and self.rng.random() < 0.5:
                order["status"] = STATUSES[STATUSES.index(order["status"]) + 1]
            else:
                order["channel"] = self.rng.choice([c for c in CHANNELS if c != order["channel"]])
            order["updated_at"] = self._moment(today, earliest=order["updated_at"])
            self.orders[order_id] = order
            day.emit("orders", order)

    def _move_orders(self, day: _Day, today: date) -> None:
        candidates = sorted(self._live_orders(today))
        for order_id in self.rng.sample(candidates, self._count(self.config.ordered_at_correction_rate, len(candidates))):
            order = dict(self.orders[order_id])
            order["ordered_at"] = order["ordered_at"] - timedelta(days=self.rng.randint(1, 3))
            order["updated_at"] = self._moment(today, earliest=order["updated_at"])
            self.orders[order_id] = order
            day.emit("orders", order)

    def _delete(self, day: _Day, today: date) -> None:
        live_lines = sorted(k for k, v in self.items.items() if not v["is_deleted"] and k[0] not in self.deleted_orders)
        for key in self.rng.sample(live_lines, self._count(self.config.delete_rate, len(live_lines))):
            line = dict(self.items[key], is_deleted=True)
            line["updated_at"] = self._moment(today, earliest=line["updated_at"])
            self.items[key] = line
            day.emit("order_items", line)
        candidates = sorted(self._live_orders(today))
        for order_id in self.rng.sample(candidates, self._count(self.config.delete_rate, len(candidates))):
            order = dict(self.orders[order_id], is_deleted=True)
            order["updated_at"] = self._moment(today, earliest=order["updated_at"])
            self.orders[order_id] = order
            self.deleted_orders.add(order_id)
            day.emit("orders", order)

    def _out_of_order(self, day: _Day, today: date) -> None:
        """An older version lands after the newer one: same key, earlier updated_at, other values."""
        candidates = sorted(self._live_orders(today))
        for order_id in self.rng.sample(candidates, self._count(self.config.out_of_order_rate, len(candidates))):
            current = self.orders[order_id]
            stale = dict(current, status="cancelled", channel="phone")
            stale["updated_at"] = current["updated_at"] - timedelta(minutes=self.rng.randint(1, 600))
            day.emit("orders", stale)

    def _duplicate(self, day: _Day) -> None:
        for table, rows in day.rows.items():
            for version in self.rng.sample(rows, self._count(self.config.duplicate_rate, len(rows))):
                rows.append(dict(version))


def generate(config: GeneratorConfig, out_dir: Path) -> list[Path]:
    """Write every day's files; return the day folders in landing order."""
    source = _Source(config)
    folders = []
    for index in range(config.days):
        day = source.simulate(index)
        folder = Path(out_dir) / (config.start_date + timedelta(days=index)).isoformat()
        folder.mkdir(parents=True, exist_ok=True)
        for table, rows in day.rows.items():
            if rows:
                _write(folder / f"{table}.{config.file_format}", table, rows)
        folders.append(folder)
    return folders


def _write(path: Path, table: str, rows: list[dict]) -> None:
    schema = contract.load().table(f"{SOURCE}.{table}").arrow_schema()
    columns = schema.names
    if path.suffix == ".parquet":
        pq.write_table(pa.Table.from_pylist([{c: r[c] for c in columns} for r in rows], schema=schema), path)
        return
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([_csv_value(row[c]) for c in columns])


def _csv_value(value: object) -> str:
    if isinstance(value, datetime):
        return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = GeneratorConfig()
    parser.add_argument("--out", type=Path, required=True, help="folder to write <day>/<table>.<format> files into")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="random seed (default %(default)s)")
    parser.add_argument("--start-date", type=date.fromisoformat, default=defaults.start_date,
                        help="first day, YYYY-MM-DD (default %(default)s)")
    parser.add_argument("--days", type=int, default=defaults.days, help="number of landing days (default %(default)s)")
    parser.add_argument("--orders-per-day", type=int, default=defaults.orders_per_day, help="new orders per day (default %(default)s)")
    parser.add_argument("--products", type=int, default=defaults.products, help="products in the catalogue (default %(default)s)")
    for name in ("late_correction_rate", "late_arrival_rate", "header_change_rate", "ordered_at_correction_rate",
                 "out_of_order_rate", "duplicate_rate", "delete_rate", "product_change_rate", "customer_change_rate"):
        parser.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name),
                            help=f"share of eligible entities per day (default %(default)s)")
    parser.add_argument("--format", dest="file_format", choices=("parquet", "csv"), default=defaults.file_format,
                        help="file format (default %(default)s)")


def config_from_args(args: argparse.Namespace) -> GeneratorConfig:
    names = GeneratorConfig.__dataclass_fields__
    return GeneratorConfig(**{k: v for k, v in vars(args).items() if k in names})
