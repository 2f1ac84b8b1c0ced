"""Fault injection: SIGKILL the pipeline at seeded points of daily runs and backfills, recover, verify.

    .venv/bin/python -m harness.chaos [--domain shop|rides] [--kills 24] [--seed 7]
        [--orders-per-day 20] [--classes daily,backfill,landing,publish,maintain,restate,deltas]
        [--out JSON]
        [--markdown FILE]
    .venv/bin/python -m harness.chaos --report JSON --markdown FILE   # a run's results as a document

The domain is one of the examples (ChaosDomain: its generated days, facts, aggregates, backfill
models and corrections): the shop (the sample generator's orders, lines, customers, products),
or rides (trips with corrections and deletions within the lookback, drivers whose commission
rate changes now and then).

Everything runs on one state folder of its own (a temporary one unless --state), one process at
a time: embedded Derby admits one JVM per metastore, and a SIGKILL ends the JVM with the process.
  setup   generate the days; land and build the first three; then one daily run and one
          backfill uninterrupted, counting the dbt statements of each (the range of kill points)
          and timing the daily run's landing and the backfill's publish
  cycle   recover what the previous process left: land its folder again (landed files are
          skipped) and `dbt run`; resume an interrupted backfill, or (none was recorded, or one
          was interrupted while starting and is abandoned) run it again; verify; then start
          the next operation, which the harness kills at its kill point
Kill point i takes the classes in turn; its operation is a daily run (land a new day, `dbt run`),
a backfill (land late corrections of three old days, `pipeline backfill` in one-day windows,
gate, publish), a restatement (late corrections of three old days, `pipeline restate`: the
dates the audit finds late, for every model missing them) or maintenance (`pipeline maintain`:
compaction, expiry down to two snapshots):
  daily, backfill,  killed after the operation's k-th dbt statement (k drawn from the seed)
  restate           plus a delay of 0..1 s, so kills fall inside statements and between them
  landing           a daily run killed within its landing: after the child prints LANDING, a
                    drawn share of the landing's time in setup
  publish           a backfill killed within its publish (fast-forwarding each table's main,
                    recording it): after PUBLISHING, a drawn share of the publish's time in setup
  maintain          maintenance killed after MAINTAINING, a drawn share of its time in setup
  deltas            a daily run killed within the run of a model maintained by deltas (its
                    declaration's `additive`; the domain's in turn): after the dbt log says
                    the node began, plus k of its statements (0 to the count in setup's daily
                    run: k = 0 falls between the facts' commit and the aggregate's) and 0..1 s
Each kill is reported with the phase it fell in, from the marks the child had printed
(LANDING/LANDED, PUBLISHING/PUBLISHED, MAINTAINING/MAINTAINED): a kill drawn for a phase can
land just after it. Recovering maintenance runs it again; recovering a restatement resumes its
run, or (none was recorded) plans and runs one again from what is late now.
Verified after every recovery: the domain's facts equal their current-state views (what a
full refresh builds), no duplicate key, every watermark at or below the greatest update time landed, no
backfill left running, every file of the days landed so far in the landing log once and its
raw table holding exactly the rows logged for it; and, when the last operation finished was a
daily run, the aggregates over the facts equal their current-state views (a backfill's publish
leaves them to the next daily run). Prints one line per kill and the totals; exit 1 if any check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

STATEMENT = re.compile(r"SQL status: OK|Command `cli \S+` (succeeded|failed)")
BACKFILL_DAYS = 3
CYCLE_TIMEOUT_S = 900
START = date(2025, 1, 1)  # the first generated day


# -- the example domains -----------------------------------------------------------------------
@dataclass(frozen=True)
class ChaosDomain:
    """What the harness needs of an example: its days of files, its facts and the aggregates
    over them (table -> (current-state view, unique key)), the models a backfill selects, and
    the corrections a backfill restates (a select of raw rows, in the raw table's columns)."""
    name: str
    generate: Callable[[int, int, int, Path], list[Path]]  # (days, events per day, seed, folder)
    facts: dict[str, tuple[str, str]]
    aggregates: dict[str, tuple[str, str]]
    backfill_models: str
    corrected_table: str  # source.table the corrections are inserted into
    corrections: Callable[[str, str, str], str]  # (start, end, raw relation) -> a select of corrected rows


def _generate_shop(days: int, per_day: int, seed: int, out: Path) -> list[Path]:
    from sample.generate import GeneratorConfig, generate

    return generate(GeneratorConfig(days=days, orders_per_day=per_day, seed=seed, start_date=START), out)


def _shop_corrections(start: str, end: str, relation: str) -> str:
    """One line per order date of the range, a second newer than its current version: older
    than the daily window, so only a backfill restates it."""
    return f"""
        select order_id, order_item_id, product_id, quantity % 5 + 1 as quantity, unit_price,
               discount_amount * 0 as discount_amount, updated_at + interval 1 second as updated_at,
               false as is_deleted
        from (
            select items.*, row_number() over (partition by orders.order_date
                                               order by items.order_id, items.order_item_id) as rn
            from staging.stg_shop__order_items as items
            inner join staging.stg_shop__orders as orders on items.order_id = orders.order_id
            where not items.is_deleted and not orders.is_deleted
              and orders.order_date >= date'{start}' and orders.order_date < date'{end}'
        ) where rn = 1"""


def _generate_rides(days: int, per_day: int, seed: int, out: Path) -> list[Path]:
    """Days of the rides example: each day's trips (picked up that day), corrections and a
    deletion of trips of the two days before (within the lookback), and now and then a new
    commission rate of a driver (effective-dated: in effect from its update time)."""
    import random as _random

    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import contract

    rng = _random.Random(seed)
    tables = contract.load()
    cities = ("Berlin", "Hamburg", "Munich")
    trips: dict[int, dict] = {}
    folders = []
    for index in range(days):
        day = datetime.combine(START + timedelta(days=index), datetime.min.time(), tzinfo=UTC)
        rows: dict[str, list[dict]] = {"trips": [], "drivers": []}
        if index == 0:
            rows["drivers"] = [{"driver_id": d, "driver_name": f"Driver {d}", "vehicle_class": "standard",
                                "commission_rate": Decimal("0.20") + Decimal(d) / 100, "updated_at": day,
                                "is_deleted": False} for d in range(1, 6)]
        elif index % 3 == 0:
            d = rng.randint(1, 5)
            rows["drivers"].append({"driver_id": d, "driver_name": f"Driver {d}", "vehicle_class": "standard",
                                    "commission_rate": Decimal(rng.randint(15, 30)) / 100,
                                    "updated_at": day + timedelta(hours=6), "is_deleted": False})
        for n in range(per_day):
            trip_id = index * per_day + n + 1
            picked = day + timedelta(minutes=rng.randint(0, 24 * 60 - 30))
            trips[trip_id] = {"trip_id": trip_id, "driver_id": rng.randint(1, 5), "city": rng.choice(cities),
                              "picked_up_at": picked, "distance_km": Decimal(rng.randint(100, 2000)) / 100,
                              "fare_amount": Decimal(rng.randint(500, 6000)) / 100,
                              "updated_at": picked + timedelta(minutes=rng.randint(5, 30)), "is_deleted": False}
            rows["trips"].append(trips[trip_id])
        earlier = [t for t in trips.values() if (day - t["picked_up_at"]).days in (0, 1) and t["picked_up_at"] < day]
        for n, trip in enumerate(rng.sample(earlier, min(3, len(earlier)))):
            changed = {**trip, "updated_at": day + timedelta(hours=1, minutes=n), "is_deleted": n == 2,
                       "fare_amount": trip["fare_amount"] + 1}
            trips[trip["trip_id"]] = changed
            rows["trips"].append(changed)
        folder = out / (START + timedelta(days=index)).isoformat()
        folder.mkdir(parents=True, exist_ok=True)
        for name, table_rows in rows.items():
            if table_rows:
                schema = tables.table(f"rides.{name}").arrow_schema()
                pq.write_table(pa.Table.from_pylist(table_rows, schema=schema), folder / f"{name}.parquet")
        folders.append(folder)
    return folders


def _rides_corrections(start: str, end: str, relation: str) -> str:
    """One trip per trip date of the range, its fare a unit higher, a second newer than its
    current version: older than the daily window, so only a backfill restates it."""
    return f"""
        select trip_id, driver_id, city, picked_up_at, distance_km, fare_amount + 1 as fare_amount,
               updated_at + interval 1 second as updated_at, false as is_deleted
        from (
            select *, row_number() over (partition by to_date(picked_up_at) order by trip_id) as rn
            from (select *, row_number() over (partition by trip_id order by updated_at desc) as version
                  from {relation}) as versions
            where version = 1 and not is_deleted
              and picked_up_at >= timestamp'{start}' and picked_up_at < timestamp'{end}'
        ) where rn = 1"""


DOMAINS = {
    "shop": ChaosDomain(
        "shop", _generate_shop,
        facts={"marts.fct_order_item": ("staging.int_order_items__current_state", "order_item_sk"),
               "marts.fct_orders": ("staging.int_orders__current_state", "order_id")},
        aggregates={"marts.agg_daily_revenue": ("marts.agg_daily_revenue__current_state", "daily_revenue_key"),
                    "marts.agg_customer_orders": ("marts.agg_customer_orders__current_state", "customer_key")},
        backfill_models="fct_order_item fct_orders", corrected_table="shop.order_items",
        corrections=_shop_corrections),
    "rides": ChaosDomain(
        "rides", _generate_rides,
        facts={"marts.fct_trip": ("marts.fct_trip__current_state", "trip_id")},
        aggregates={"marts.agg_daily_city_trips": ("marts.agg_daily_city_trips__current_state", "daily_city_key")},
        backfill_models="fct_trip", corrected_table="rides.trips", corrections=_rides_corrections),
}


# -- the child process -------------------------------------------------------------------------
class _Child:
    """One process of the harness: its Spark session, dbt, and the harness's state files."""

    def __init__(self, domain: ChaosDomain) -> None:
        from pipeline import paths
        from pipeline.dbt import Dbt
        from pipeline.spark import get_spark

        self.state = paths.state_dir()
        self.spark = get_spark()
        self.dbt = Dbt(quiet=True)
        self.domain = domain
        self.seconds: dict[str, float] = {}  # how long the last landing and publish took

    # state: which day comes next; the operation under way (the marker a kill leaves behind)
    def _read(self, name: str) -> dict | None:
        path = self.state / name
        return json.loads(path.read_text()) if path.exists() else None

    def _write(self, name: str, value: dict | None) -> None:
        path = self.state / name
        if value is None:
            path.unlink(missing_ok=True)
            return
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(value))
        temporary.replace(path)  # atomic: a kill leaves the old or the new file, never half of one

    def setup(self, days: int, orders_per_day: int, seed: int) -> None:
        from pipeline import warehouse
        from pipeline.land import land

        warehouse.reset(self.spark)
        self.dbt.invoke("seed")
        folders = self.domain.generate(days, orders_per_day, seed, self.state / "landing")
        for folder in folders[:3]:
            land(self.spark, sorted(folder.iterdir()))
        self.dbt.invoke("run")
        self._write("chaos_days.json", {"folders": [str(f) for f in folders], "next": 3,
                                        "start": str(folders[0].name)})
        counts = {}
        for op in ("daily", "backfill", "restate", "maintain"):
            offset = _log_size(self.state)
            self.operate(op)
            counts[op] = _statements_since(self.state, offset)
            if op == "daily":  # per model maintained by deltas, the statements of its run
                counts["deltas"] = {name: _node_statements(self.state, offset, name)
                                    for name in _delta_models(self.domain)}
        # a kill in landing or in publish falls within the time they took here
        counts.update({f"{phase}_s": round(seconds, 2) for phase, seconds in self.seconds.items()})
        print("CALIBRATED " + json.dumps(counts), flush=True)

    def operate(self, op: str) -> None:
        """Start an operation; the marker says what to finish if the process dies in it."""
        if op == "none":
            return
        if op == "daily":
            days = self._read("chaos_days.json")
            if days["next"] >= len(days["folders"]):
                raise SystemExit("chaos: no generated day left for a daily run; pass more --days")
            self._write("chaos_pending.json", {"op": "daily", "folder": days["folders"][days["next"]]})
            print("OP-START", flush=True)
            self._daily(days["folders"][days["next"]])
        elif op == "maintain":
            self._write("chaos_pending.json", {"op": "maintain"})
            print("OP-START", flush=True)
            self._maintain()
        elif op == "restate":
            self._write("chaos_pending.json", {"op": "restate"})
            print("OP-START", flush=True)
            self._corrections()
            self._restate()
        else:
            self._write("chaos_pending.json", {"op": "backfill"})
            print("OP-START", flush=True)
            self._corrections()
            self._backfill()
        self._write("chaos_pending.json", None)
        self._write("chaos_last.json", {"op": op})

    def _maintain(self) -> None:
        """`pipeline maintain` of every table: compaction, and expiry down to the last two
        snapshots (what a week's default reaches once the tables are older)."""
        from pipeline.maintain import maintain

        print("MAINTAINING", flush=True)  # the harness's mark for a kill in maintenance
        started = time.monotonic()
        maintain(self.spark, expire_older_than=timedelta(0), retain_last=2, orphans_older_than=None)
        self.seconds["maintain"] = time.monotonic() - started
        print("MAINTAINED", flush=True)

    def _daily(self, folder: str) -> None:
        from pipeline.land import land

        print("LANDING", flush=True)  # the harness's mark for a kill in landing
        started = time.monotonic()
        land(self.spark, sorted(Path(folder).iterdir()))
        self.seconds["landing"] = time.monotonic() - started
        print("LANDED", flush=True)
        self.dbt.invoke("run")
        days = self._read("chaos_days.json")
        if days["folders"][days["next"]] == folder:
            days["next"] += 1
            self._write("chaos_days.json", days)

    def _range(self) -> tuple[str, str]:
        start = date.fromisoformat(self._read("chaos_days.json")["start"])
        return start.isoformat(), (start + timedelta(days=BACKFILL_DAYS)).isoformat()

    def _corrections(self) -> None:
        """The domain's corrections of the first days (older than the daily window)."""
        from pipeline import contract

        start, end = self._range()
        table = contract.load().table(self.domain.corrected_table)
        columns = ", ".join(c.name for c in table.columns)
        select = self.domain.corrections(start, end, table.relation)
        self.spark.sql(f"insert into {table.relation} ({columns}, _loaded_at, _source_file)"
                       f" select {columns}, current_timestamp(), 'chaos-corrections' from ({select})")

    def _backfill(self) -> None:
        start, end = self._range()
        runner = self._runner()
        runner.start(runner.plan(start, end, self.domain.backfill_models, 1), "chaos harness")

    def _restate(self) -> None:
        """`pipeline restate`: the dates of the rows late beyond their window (the audit), for
        every model that misses them, through the backfill machinery."""
        runner = self._runner()
        try:
            plan = runner.restate_plan(None, 1)
            if plan is not None:
                runner.restate(plan, "chaos harness", runner.restate_impact(None))
        finally:
            runner.release_audit()

    def _runner(self):
        """The backfill runner, its publish marked for the harness (a kill in publish)."""
        from rich.console import Console

        from pipeline.backfill.runner import Backfill

        runner = Backfill(self.dbt, self.spark, Console(file=sys.stderr))
        publish = runner._publish

        def marked(*args, **kwargs):
            print("PUBLISHING", flush=True)
            started = time.monotonic()
            publish(*args, **kwargs)
            self.seconds["publish"] = time.monotonic() - started
            print("PUBLISHED", flush=True)

        runner._publish = marked
        return runner

    def recover(self) -> str:
        """Finish what a killed process left; say what that was."""
        from pipeline.backfill.control import Control
        from pipeline.backfill.plan import BackfillRefused

        pending = self._read("chaos_pending.json")
        if pending is None:
            return "nothing pending"
        if pending["op"] == "daily":
            self._daily(pending["folder"])
            done = "daily run finished"
        elif pending["op"] == "maintain":
            self._maintain()
            done = "maintenance run again"
        else:
            runner = self._runner()
            resumed = []
            for run in Control(self.spark).active_runs():
                try:
                    runner.resume(run.run_id)
                    resumed.append(run.run_id)
                except BackfillRefused as refused:
                    if "interrupted while starting" not in str(refused):
                        raise
                    runner.abandon(run.run_id)
            if resumed:
                done = f"backfill {', '.join(resumed)} resumed and published"
            elif pending["op"] == "restate":
                # killed before its run was recorded, or after it published: what is late now
                self._restate()
                done = "restatement planned and run again"
            else:
                # killed before its run was recorded, or after it published: the corrections may
                # not have committed, and a range backfilled twice changes nothing
                self._corrections()
                self._backfill()
                done = "backfill started again"
        self._write("chaos_pending.json", None)
        self._write("chaos_last.json", {"op": pending["op"]})
        return done

    def verify(self) -> dict:
        from pipeline import contract, iceberg, paths
        from pipeline.backfill.control import Control

        report = {"lost": 0, "duplicated": 0, "duplicate_keys": 0}
        for fact, (view, key) in self.domain.facts.items():
            lost, extra = self._against_current_state(fact, view)
            report["lost"] += lost
            report["duplicated"] += extra
            report["duplicate_keys"] += self.spark.sql(
                f"select count(*) - count(distinct {key}) from {fact}").collect()[0][0]
        # the greatest update time a run may load: versions further ahead of their landing than
        # the clock-skew tolerance are quarantined (quarantine_reason), not loaded
        skew = int(paths.project_var("clock_skew_tolerance_minutes"))
        greatest = self.spark.sql(" union all ".join(
            f"select max({t.update_column}) as t from {t.relation}"
            f" where {t.update_column} <= _loaded_at + interval {skew} minutes"
            for t in contract.load().tables.values())).agg({"t": "max"}).collect()[0][0]
        report["watermarks_above_landed"] = sorted(
            name for name, mark in iceberg.watermarks(self.spark).items() if mark > greatest)
        # the aggregates over the facts are caught up by a daily run (a backfill's publish leaves
        # them to the next one: their scope is the facts' change records)
        last = self._read("chaos_last.json")
        report["aggregates_checked"] = bool(last and last["op"] == "daily")
        report["aggregates_differing"] = {}
        if report["aggregates_checked"]:
            for aggregate, (view, _) in self.domain.aggregates.items():
                differing = sum(self._against_current_state(aggregate, view))
                if differing:
                    report["aggregates_differing"][aggregate] = differing
        report["backfills_running"] = [r.run_id for r in Control(self.spark).active_runs()]
        report["files_not_landed_once"] = self._files_not_landed_once()
        report["rows"] = sum(self.spark.table(f).count() for f in self.domain.facts)
        return report

    def _against_current_state(self, table: str, view: str) -> tuple[int, int]:
        """Rows of the current-state view (what a full refresh builds) the table lacks, and rows
        the table holds beyond them, every column compared."""
        columns = ", ".join(self.spark.table(table).columns)
        actual = Counter(tuple(r) for r in self.spark.sql(f"select {columns} from {table}").collect())
        expected = Counter(tuple(r) for r in self.spark.sql(
            f"select {columns} from {view} where not is_deleted").collect())
        return sum((expected - actual).values()), sum((actual - expected).values())

    def _files_not_landed_once(self) -> list[str]:
        """Every file of the days landed so far is in the landing log once, and its raw table
        holds exactly the rows logged for it (`_source_file`): a kill in landing lost, doubled
        or left unlogged none of them."""
        from pipeline import contract
        from pipeline.land import LANDED_FILES

        days = self._read("chaos_days.json")
        files = [str(p.resolve()) for folder in days["folders"][:days["next"]] for p in Path(folder).iterdir()]
        logged = {}
        for row in self.spark.sql(f"select table_name, source_file, count(*) as n, max(file_rows) as file_rows"
                                  f" from {LANDED_FILES} group by table_name, source_file").collect():
            logged.setdefault(row.source_file, []).append((row.table_name, row.n, row.file_rows))
        raw = {}
        for table in contract.load().tables.values():
            for row in self.spark.sql(f"select _source_file, count(*) as n from {table.relation}"
                                      " group by _source_file").collect():
                raw[(table.qualified_name, row._source_file)] = row.n
        wrong = []
        for path in files:
            entries = logged.get(path, [])
            if len(entries) != 1 or entries[0][1] != 1:
                wrong.append(f"{Path(path).name}: logged {sum(e[1] for e in entries)} times")
            elif raw.get((entries[0][0], path), 0) != entries[0][2]:
                wrong.append(f"{Path(path).name}: {raw.get((entries[0][0], path), 0)} rows in {entries[0][0]},"
                             f" {entries[0][2]} logged")
        return wrong


def _delta_models(domain: ChaosDomain) -> list[str]:
    """The domain's aggregates whose daily runs apply deltas (their declaration's `additive`),
    from the manifest the last dbt command wrote."""
    from pipeline.manifest import incremental_models

    return sorted(m.name for m in incremental_models() if m.additive and m.relation in domain.aggregates)


def _node_mark(event: str, name: str) -> re.Pattern:
    """dbt's log line that a model's node began (`event` Began) or finished running."""
    return re.compile(rf"{event} running node model\.\w+\.{re.escape(name)}\b")


def _log_since(state: Path, offset: int) -> str:
    log = state / "logs" / "dbt.log"
    if not log.exists():
        return ""
    with log.open(errors="replace") as handle:
        handle.seek(offset)
        return handle.read()


def _node_statements(state: Path, offset: int, name: str) -> int:
    """The dbt statements of model `name`'s run in the log since `offset`: 0 if it did not run, or
    applied no deltas (staged no MERGE under a mark)."""
    text = _log_since(state, offset)
    began, finished = _node_mark("Began", name).search(text), _node_mark("Finished", name).search(text)
    if began is None:
        return 0
    run = text[began.end():finished.start() if finished else len(text)]
    return len(STATEMENT.findall(run)) if "set spark.wap.id = backfill_safe" in run else 0


def _log_size(state: Path) -> int:
    log = state / "logs" / "dbt.log"
    return log.stat().st_size if log.exists() else 0


def _statements_since(state: Path, offset: int) -> int:
    return len(STATEMENT.findall(_log_since(state, offset)))


def _child_main(args: argparse.Namespace) -> int:
    child = _Child(DOMAINS[args.domain])
    if args.phase == "setup":
        child.setup(args.days, args.orders_per_day, args.seed)
        return 0
    recovered = child.recover()
    print("VERIFIED " + json.dumps({"recovered": recovered, **child.verify()}), flush=True)
    child.operate(args.op)
    return 0


# -- the harness ---------------------------------------------------------------------------------
class _Output:
    """A child's output lines as they come (read by a thread of their own)."""

    def __init__(self, stream) -> None:
        self._lines: list[str] = []
        self._ended = False
        self._changed = threading.Condition()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream) -> None:
        for line in stream:
            with self._changed:
                self._lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def seen(self, prefix: str) -> str | None:
        with self._changed:
            return next((line for line in self._lines if line.startswith(prefix)), None)

    def wait_for(self, prefix: str, deadline: float) -> str | None:
        """The first line starting with `prefix`; None if the process ended (or hung past the
        deadline) first."""
        with self._changed:
            while True:
                line = next((line for line in self._lines if line.startswith(prefix)), None)
                if line is not None or self._ended or time.monotonic() > deadline:
                    return line
                self._changed.wait(timeout=min(1.0, max(0.05, deadline - time.monotonic())))


def _spawn(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, _Output]:
    # a session of its own: after the SIGKILL the harness waits for the whole group (the JVM the
    # killed Python started exits on its own once its parent is gone) before the next process
    proc = subprocess.Popen([sys.executable, "-m", "harness.chaos", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    return proc, _Output(proc.stdout)


KILL_CLASSES = ("daily", "backfill", "landing", "publish", "maintain", "restate", "deltas")
OPERATION = {"daily": "daily", "backfill": "backfill", "landing": "daily", "publish": "backfill",
             "maintain": "maintain", "restate": "restate", "deltas": "daily"}
# a kill in landing, publish or maintenance: after the child's mark, within the time the phase
# took in setup
MARKS = {"landing": ("LANDING", "LANDED", "landing_s"), "publish": ("PUBLISHING", "PUBLISHED", "publish_s"),
         "maintain": ("MAINTAINING", "MAINTAINED", "maintain_s")}


def run(kills: int, seed: int, orders_per_day: int, state: Path, classes: tuple[str, ...] = KILL_CLASSES,
        out_file: Path | None = None, domain: str = "shop") -> dict:
    env = {**os.environ, "PIPELINE_STATE_DIR": str(state), "DBT_TARGET_PATH": str(state / "target"),
           "PYTHONUNBUFFERED": "1"}
    kinds = [classes[i % len(classes)] for i in range(kills)]
    # built, calibration, one per kill of a daily operation, the last cycle's
    days = 3 + 1 + sum(OPERATION[kind] == "daily" for kind in kinds) + 1
    started = time.monotonic()
    proc, out = _spawn(["--phase", "setup", "--domain", domain, "--days", str(days), "--orders-per-day",
                        str(orders_per_day), "--seed", str(seed)], env)
    calibrated = out.wait_for("CALIBRATED ", time.monotonic() + CYCLE_TIMEOUT_S)
    if calibrated is None:
        proc.kill()
    proc.wait(timeout=60)
    if calibrated is None or proc.returncode != 0:
        raise RuntimeError(f"chaos setup failed (exit {proc.returncode}); see {state / 'logs' / 'dbt.log'}")
    statements = json.loads(calibrated.removeprefix("CALIBRATED "))
    deltas = sorted(name for name, n in statements.get("deltas", {}).items() if n)
    if "deltas" in kinds and not deltas:
        raise RuntimeError(f"kill class deltas: no model of the {domain} example applied deltas in setup's daily run"
                           f" (models declaring additive: {sorted(statements.get('deltas', {})) or 'none'})")
    print(f"setup: {days} generated days x {orders_per_day} orders; statements per operation and seconds of"
          f" landing and publish {statements} ({time.monotonic() - started:.0f} s)", flush=True)

    rng = random.Random(seed)
    plan: list[tuple[str, int, float, str | None]] = []
    for kind in kinds:  # (class, statement k, delay, the model maintained by deltas it kills in)
        node = deltas[sum(p[0] == "deltas" for p in plan) % len(deltas)] if kind == "deltas" else None
        k = (0 if kind in MARKS else rng.randint(0, statements["deltas"][node]) if node
             else rng.randint(1, statements[kind]))
        plan.append((kind, k, rng.uniform(0.0, 1.0), node))
    results, previous = [], None
    for i, point in enumerate([*plan, ("none", 0, 0.0, None)]):
        kind, k, delay, node = point
        op = OPERATION.get(kind, "none")
        proc, out = _spawn(["--phase", "cycle", "--domain", domain, "--op", op], env)
        deadline = time.monotonic() + CYCLE_TIMEOUT_S
        verified = out.wait_for("VERIFIED ", deadline)
        if verified is None:
            proc.kill()
            proc.wait(timeout=60)
            raise RuntimeError(f"cycle {i}: recovery failed (exit {proc.returncode}); see {state / 'logs' / 'dbt.log'}")
        check = json.loads(verified.removeprefix("VERIFIED "))
        if previous is not None:
            previous["after_recovery"] = check
            results.append(previous)
            print(_describe(previous), flush=True)
            if out_file is not None:  # the kills so far, should the run itself be stopped
                out_file.write_text(json.dumps({"domain": domain, "seed": seed, "classes": list(classes), "partial": True,
                                                "statements_per_operation": statements, "results": results},
                                               indent=2, default=str))
        if op == "none":
            proc.wait(timeout=CYCLE_TIMEOUT_S)
            break
        if out.wait_for("OP-START", deadline) is None:
            proc.kill()
            raise RuntimeError(f"cycle {i}: the operation never started (exit {proc.wait(timeout=60)})")
        offset = _log_size(state)
        if kind in MARKS:
            mark, _, seconds = MARKS[kind]
            killed = _kill_after_mark(proc, out, mark, delay * statements.get(seconds, 1.0), deadline)
        else:
            killed = _kill_at(proc, state, offset, k, delay, deadline, node)
        previous = {"kill": i + 1, "class": kind, "op": op, "statement": k, "delay_s": round(delay, 2),
                    "killed": killed, "in": _phase_killed(op, out, node, state, offset) if killed else None,
                    **({"node": node} if node else {})}
    checks = [r["after_recovery"] for r in results]
    totals = {
        "kills": sum(r["killed"] for r in results),
        "kill_points": len(results),
        "kills_by_phase": dict(Counter(r["in"] for r in results if r["killed"])),
        "recoveries_verified": sum(_clean(c) for c in checks),
        "rows_lost": sum(c["lost"] for c in checks),
        "rows_duplicated": sum(c["duplicated"] + c["duplicate_keys"] for c in checks),
        "watermarks_above_landed": sum(len(c["watermarks_above_landed"]) for c in checks),
        "backfills_left_running": sum(len(c["backfills_running"]) for c in checks),
        "files_not_landed_once": sum(len(c["files_not_landed_once"]) for c in checks),
        "aggregate_rows_differing": sum(sum(c["aggregates_differing"].values()) for c in checks),
        "aggregates_checked": sum(c["aggregates_checked"] for c in checks),
        "seconds": round(time.monotonic() - started),
    }
    return {"domain": domain, "seed": seed, "classes": list(classes), "statements_per_operation": statements,
            "results": results, "totals": totals}


def _phase_killed(op: str, out: _Output, node: str | None = None, state: Path | None = None,
                  offset: int = 0) -> str:
    """Where the operation was when it was killed, from the marks it printed (and, for a kill
    in `node`'s run, dbt's log since `offset`)."""
    if op == "daily" and out.seen("LANDED") is None:
        return "landing"
    if op == "daily" and node and state is not None:
        text = _log_since(state, offset)
        if _node_mark("Began", node).search(text) is None:
            return f"daily dbt run before {node}"
        return f"daily dbt run after {node}" if _node_mark("Finished", node).search(text) else f"{node}'s run"
    if op == "daily":
        return "daily dbt run"
    if op == "maintain":
        return "maintenance" if out.seen("MAINTAINED") is None else "after maintenance"
    if out.seen("PUBLISHED") is not None:
        return "after publish"
    if out.seen("PUBLISHING") is not None:
        return "publish"
    return "restatement windows and gate" if op == "restate" else "backfill windows and gate"


def _kill_after_mark(proc: subprocess.Popen, out: _Output, mark: str, delay: float, deadline: float) -> bool:
    """SIGKILL `proc` `delay` s after it printed `mark`. False if it finished first."""
    if out.wait_for(mark, deadline) is not None:
        time.sleep(delay)
    return _kill(proc)


def _kill_at(proc: subprocess.Popen, state: Path, offset: int, k: int, delay: float, deadline: float,
             node: str | None = None) -> bool:
    """SIGKILL `proc` `delay` s after its k-th dbt statement since `offset` (with `node`: since
    dbt began running that model; k may be 0). False if it finished first."""
    began = _node_mark("Began", node) if node else None
    while True:
        text = _log_since(state, offset)
        found = began.search(text) if began else None
        if (began is None or found) and len(STATEMENT.findall(text, found.end() if found else 0)) >= k:
            break
        if proc.poll() is not None or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    time.sleep(delay)
    return _kill(proc)


def _kill(proc: subprocess.Popen) -> bool:
    if proc.poll() is not None:
        return False
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    _wait_for_group(proc.pid)
    return True


def _wait_for_group(group: int, timeout_s: float = 60.0) -> None:
    """Until no process of the group is left (the orphaned JVM shuts down by itself)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(group, signal.SIGKILL)


def _clean(check: dict) -> bool:
    return (check["lost"] == 0 and check["duplicated"] == 0 and check["duplicate_keys"] == 0
            and not check["watermarks_above_landed"] and not check["backfills_running"]
            and not check["files_not_landed_once"] and not check.get("aggregates_differing"))


def _describe(result: dict) -> str:
    check = result["after_recovery"]
    what = f"killed in {result['in']}" if result["killed"] else "finished before its kill point"
    point = (f"after its mark +{result['delay_s']:.2f} of the phase" if result["class"] in MARKS
             else f"statement {result['statement']:>3}" + (f" of {result['node']}" if result.get("node") else "")
             + f" +{result['delay_s']:.2f} s")
    return (f"kill {result['kill']:>2}: {result['class']:<8} {point} {what}; recovery: {check['recovered']};"
            f" {'ok' if _clean(check) else 'FAILED'}"
            f" (lost {check['lost']}, duplicated {check['duplicated'] + check['duplicate_keys']},"
            f" watermarks above landed {check['watermarks_above_landed'] or 0},"
            f" backfills running {check['backfills_running'] or 0},"
            f" files not landed once {check['files_not_landed_once'] or 0},"
            f" aggregates {check['aggregates_differing'] or 'equal' if check['aggregates_checked'] else 'not checked'};"
            f" {check['rows']} fact rows)")


def _commit() -> str | None:
    """The project's commit, `+changes` when its tracked files differ from it."""
    from pipeline import paths

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=paths.PROJECT_DIR, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=paths.PROJECT_DIR,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+changes" if dirty else "")


def markdown(outcome: dict, command: str) -> str:
    """A run's result as a document: the command, the totals, the kills per class and the
    phase each fell in, and one line per kill."""
    totals = outcome["totals"]
    lines = [f"# Fault injection: {totals['kill_points']} kill points on the {outcome.get('domain', 'shop')} example",
             "", f"Command: `{command}`" + (f", at commit {outcome['commit']}" if outcome.get("commit") else "")
             + (f", started {outcome['started']}" if outcome.get("started") else ""), "",
             f"Statements per operation and seconds of the marked phases in setup: "
             f"`{json.dumps(outcome['statements_per_operation'])}`", "",
             "| totals | |", "|---|---|"]
    lines += [f"| {name.replace('_', ' ')} | "
              + (", ".join(f"{k} {v}" for k, v in value.items()) if isinstance(value, dict) else str(value)) + " |"
              for name, value in totals.items()]
    per_class: dict[str, Counter] = {}
    for r in outcome["results"]:
        per_class.setdefault(r["class"], Counter())[r["in"] if r["killed"] else "finished before its kill point"] += 1
    lines += ["", "| class | kill points | where the kills fell |", "|---|---|---|"]
    for name, where in per_class.items():
        lines.append(f"| {name} | {sum(where.values())} | "
                     + ", ".join(f"{place} {n}" for place, n in where.most_common()) + " |")
    lines += ["", "Each kill, and what the recovery found:", "", "```"]
    lines += [_describe(r) for r in outcome["results"]]
    return "\n".join([*lines, "```", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.chaos", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=24, help="kill points, taking --classes in turn (default 24)")
    parser.add_argument("--classes", default=",".join(KILL_CLASSES),
                        help="kill classes in turn: daily (after a dbt statement of a daily run), backfill (of a"
                             " backfill), landing (within a daily run's landing), publish (within a backfill's"
                             " publish), maintain (within `pipeline maintain`), restate (after a dbt statement of"
                             " `pipeline restate`), deltas (within the run of a model maintained by deltas);"
                             " default"
                             f" {','.join(KILL_CLASSES)}")
    parser.add_argument("--domain", choices=sorted(DOMAINS), default="shop",
                        help="the example whose days are landed, run, backfilled and verified (default shop)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the data and of the kill points (default 7)")
    parser.add_argument("--orders-per-day", type=int, default=20,
                        help="generated orders (rides: trips) per day (default 20)")
    parser.add_argument("--state", type=Path, help="state folder (default: a new temporary one)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--markdown", type=Path, help="write the results as a markdown document here")
    parser.add_argument("--report", type=Path, metavar="JSON",
                        help="no run: write the markdown of the results a run wrote (--out) to --markdown")
    parser.add_argument("--phase", choices=("setup", "cycle"), help=argparse.SUPPRESS)
    parser.add_argument("--op", choices=("daily", "backfill", "maintain", "restate", "none"), default="none",
                        help=argparse.SUPPRESS)
    parser.add_argument("--days", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        return _child_main(args)
    if args.report:
        if not args.markdown:
            parser.error("--report needs --markdown")
        outcome = json.loads(args.report.read_text())
        args.markdown.write_text(markdown(outcome, outcome.get("command", "(not recorded)")))
        return 0
    if not 1 <= args.kills <= 200:
        parser.error("--kills must be between 1 and 200")
    if not 1 <= args.orders_per_day <= 10000:
        parser.error("--orders-per-day must be between 1 and 10000")
    classes = tuple(c.strip() for c in args.classes.split(",") if c.strip())
    unknown = sorted(set(classes) - set(KILL_CLASSES))
    if unknown or not classes:
        parser.error(f"--classes: {', '.join(unknown) or 'none given'}: not one of {', '.join(KILL_CLASSES)}")
    state = args.state or Path(tempfile.mkdtemp(prefix="chaos_"))
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    outcome = run(args.kills, args.seed, args.orders_per_day, state, classes, args.out, args.domain)
    totals = outcome["totals"]
    print(f"kills {totals['kills']} of {totals['kill_points']} kill points (by phase: {totals['kills_by_phase']}),"
          f" recoveries verified "
          f"{totals['recoveries_verified']}, rows lost {totals['rows_lost']}, rows duplicated "
          f"{totals['rows_duplicated']}, watermarks above the landed data {totals['watermarks_above_landed']}, "
          f"backfills left running {totals['backfills_left_running']}, files not landed once "
          f"{totals['files_not_landed_once']}, aggregate rows differing after a daily run "
          f"{totals['aggregate_rows_differing']} ({totals['aggregates_checked']} checks) ({totals['seconds']} s;"
          f" state {state})")
    outcome["command"] = "python -m harness.chaos " + " ".join(argv if argv is not None else sys.argv[1:])
    outcome["started"], outcome["commit"] = started, _commit()
    if args.out:
        args.out.write_text(json.dumps(outcome, indent=2, default=str))
    if args.markdown:
        args.markdown.write_text(markdown(outcome, outcome["command"]))
    return 0 if totals["recoveries_verified"] == totals["kill_points"] else 1


if __name__ == "__main__":
    sys.exit(main())
