"""Fault injection: SIGKILL the pipeline at seeded points of daily runs and backfills, recover, verify.

    .venv/bin/python -m harness.chaos [--kills 24] [--seed 7] [--orders-per-day 20] [--out FILE]

Everything runs on one state folder of its own (a temporary one unless --state), one process at
a time: embedded Derby admits one JVM per metastore, and a SIGKILL ends the JVM with the process.
  setup   generate the days; land and build the first three; then one daily run and one
          backfill uninterrupted, counting the dbt statements of each (the range of kill points)
  cycle   recover what the previous process left: land its folder again (landed files are
          skipped) and `dbt run`; resume an interrupted backfill, or (none was recorded, or one
          was interrupted while starting and is abandoned) run it again; verify; then start
          the next operation, which the harness kills at its kill point
Kill point i: a daily run (land a new day, `dbt run`) for even i, a backfill (land late
corrections of three old days, `pipeline backfill` in one-day windows, gate, publish) for odd i;
killed after its k-th dbt statement (k drawn from the seed; k = 0: during landing or the
corrections' insert) plus a delay of 0..1 s, so kills fall inside statements, between them, and
in a backfill's publish (which follows its last dbt statement).
Verified after every recovery: both facts equal their current-state views (what a full refresh
builds), no duplicate key, every watermark at or below the greatest update time landed, no
backfill left running. Prints one line per kill and the totals; exit 1 if any check failed.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

STATEMENT = re.compile(r"SQL status: OK|Command `cli \S+` (succeeded|failed)")
FACTS = {"marts.fct_order_item": ("staging.int_order_items__current_state", "order_item_sk"),
         "marts.fct_orders": ("staging.int_orders__current_state", "order_id")}
BACKFILL_MODELS = "fct_order_item fct_orders"
BACKFILL_DAYS = 3
CYCLE_TIMEOUT_S = 900


# -- the child process -------------------------------------------------------------------------
class _Child:
    """One process of the harness: its Spark session, dbt, and the harness's state files."""

    def __init__(self) -> None:
        from pipeline import paths
        from pipeline.dbt import Dbt
        from pipeline.spark import get_spark

        self.state = paths.state_dir()
        self.spark = get_spark()
        self.dbt = Dbt(quiet=True)

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
        from sample.generate import GeneratorConfig, generate
        from pipeline.land import land

        warehouse.reset(self.spark)
        self.dbt.invoke("seed")
        folders = generate(GeneratorConfig(days=days, orders_per_day=orders_per_day, seed=seed),
                           self.state / "landing")
        for folder in folders[:3]:
            land(self.spark, sorted(folder.iterdir()))
        self.dbt.invoke("run")
        self._write("chaos_days.json", {"folders": [str(f) for f in folders], "next": 3,
                                        "start": str(folders[0].name)})
        counts = {}
        for op in ("daily", "backfill"):
            offset = _log_size(self.state)
            self.operate(op)
            counts[op] = _statements_since(self.state, offset)
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
        else:
            self._write("chaos_pending.json", {"op": "backfill"})
            print("OP-START", flush=True)
            self._corrections()
            self._backfill()
        self._write("chaos_pending.json", None)

    def _daily(self, folder: str) -> None:
        from pipeline.land import land

        land(self.spark, sorted(Path(folder).iterdir()))
        self.dbt.invoke("run")
        days = self._read("chaos_days.json")
        if days["folders"][days["next"]] == folder:
            days["next"] += 1
            self._write("chaos_days.json", days)

    def _range(self) -> tuple[str, str]:
        from datetime import date

        start = date.fromisoformat(self._read("chaos_days.json")["start"])
        return start.isoformat(), (start + timedelta(days=BACKFILL_DAYS)).isoformat()

    def _corrections(self) -> None:
        """One correction per order date of the backfill range, a second newer than the line's
        current version: older than the daily window, so only a backfill restates it."""
        start, end = self._range()
        self.spark.sql(f"""
            insert into raw.order_items
            select order_id, order_item_id, product_id, quantity % 5 + 1, unit_price, discount_amount * 0,
                   updated_at + interval 1 second, false, current_timestamp(), 'chaos-corrections'
            from (
                select items.*, row_number() over (partition by orders.order_date
                                                   order by items.order_id, items.order_item_id) as rn
                from staging.stg_shop__order_items as items
                inner join staging.stg_shop__orders as orders on items.order_id = orders.order_id
                where not items.is_deleted and not orders.is_deleted
                  and orders.order_date >= date'{start}' and orders.order_date < date'{end}'
            ) where rn = 1
        """)

    def _backfill(self) -> None:
        from rich.console import Console

        from pipeline.backfill.runner import Backfill

        start, end = self._range()
        runner = Backfill(self.dbt, self.spark, Console(file=sys.stderr))
        runner.start(runner.plan(start, end, BACKFILL_MODELS, 1), "chaos harness")

    def recover(self) -> str:
        """Finish what a killed process left; say what that was."""
        from rich.console import Console

        from pipeline.backfill.control import Control
        from pipeline.backfill.runner import Backfill, BackfillRefused

        pending = self._read("chaos_pending.json")
        if pending is None:
            return "nothing pending"
        if pending["op"] == "daily":
            self._daily(pending["folder"])
            done = "daily run finished"
        else:
            runner = Backfill(self.dbt, self.spark, Console(file=sys.stderr))
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
            else:
                # killed before its run was recorded, or after it published: the corrections may
                # not have committed, and a range backfilled twice changes nothing
                self._corrections()
                self._backfill()
                done = "backfill started again"
        self._write("chaos_pending.json", None)
        return done

    def verify(self) -> dict:
        from pipeline import iceberg, paths
        from pipeline.backfill.control import Control

        report = {"lost": 0, "duplicated": 0, "duplicate_keys": 0}
        for fact, (view, key) in FACTS.items():
            columns = ", ".join(self.spark.table(fact).columns)
            actual = Counter(tuple(r) for r in self.spark.sql(f"select {columns} from {fact}").collect())
            expected = Counter(tuple(r) for r in self.spark.sql(
                f"select {columns} from {view} where not is_deleted").collect())
            report["lost"] += sum((expected - actual).values())
            report["duplicated"] += sum((actual - expected).values())
            report["duplicate_keys"] += self.spark.sql(
                f"select count(*) - count(distinct {key}) from {fact}").collect()[0][0]
        # the greatest update time a run may load: versions further ahead of their landing than
        # the clock-skew tolerance are quarantined (quarantine_reason), not loaded
        skew = int(paths.project_var("clock_skew_tolerance_minutes"))
        greatest = self.spark.sql(" union all ".join(
            f"select max(updated_at) as t from raw.{t} where updated_at <= _loaded_at + interval {skew} minutes"
            for t in ("orders", "order_items", "customers", "products"))).agg({"t": "max"}).collect()[0][0]
        report["watermarks_above_landed"] = sorted(
            name for name, mark in iceberg.watermarks(self.spark).items() if mark > greatest)
        report["backfills_running"] = [r.run_id for r in Control(self.spark).active_runs()]
        report["rows"] = sum(self.spark.table(f).count() for f in FACTS)
        return report


def _log_size(state: Path) -> int:
    log = state / "logs" / "dbt.log"
    return log.stat().st_size if log.exists() else 0


def _statements_since(state: Path, offset: int) -> int:
    log = state / "logs" / "dbt.log"
    if not log.exists():
        return 0
    with log.open(errors="replace") as handle:
        handle.seek(offset)
        return len(STATEMENT.findall(handle.read()))


def _child_main(args: argparse.Namespace) -> int:
    child = _Child()
    if args.phase == "setup":
        child.setup(args.days, args.orders_per_day, args.seed)
        return 0
    recovered = child.recover()
    print("VERIFIED " + json.dumps({"recovered": recovered, **child.verify()}), flush=True)
    child.operate(args.op)
    return 0


# -- the harness ---------------------------------------------------------------------------------
def _spawn(args: list[str], env: dict[str, str]) -> tuple[subprocess.Popen, queue.Queue]:
    # a session of its own: after the SIGKILL the harness waits for the whole group (the JVM the
    # killed Python started exits on its own once its parent is gone) before the next process
    proc = subprocess.Popen([sys.executable, "-m", "harness.chaos", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    lines: queue.Queue = queue.Queue()

    def read() -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    return proc, lines


def _next_line(lines: queue.Queue, prefix: str, deadline: float) -> str | None:
    """The next output line starting with `prefix`; None if the process ended (or hung past
    the deadline) first."""
    while True:
        try:
            line = lines.get(timeout=max(1.0, deadline - time.monotonic()))
        except queue.Empty:
            return None
        if line is None:
            return None
        if line.startswith(prefix):
            return line


def run(kills: int, seed: int, orders_per_day: int, state: Path) -> dict:
    env = {**os.environ, "PIPELINE_STATE_DIR": str(state), "DBT_TARGET_PATH": str(state / "target"),
           "PYTHONUNBUFFERED": "1"}
    days = 3 + 1 + (kills + 1) // 2 + 1  # built, calibration, one per daily kill, the last cycle's
    started = time.monotonic()
    proc, lines = _spawn(["--phase", "setup", "--days", str(days), "--orders-per-day", str(orders_per_day),
                          "--seed", str(seed)], env)
    calibrated = _next_line(lines, "CALIBRATED ", time.monotonic() + CYCLE_TIMEOUT_S)
    if calibrated is None:
        proc.kill()
    proc.wait(timeout=60)
    if calibrated is None or proc.returncode != 0:
        raise RuntimeError(f"chaos setup failed (exit {proc.returncode}); see {state / 'logs' / 'dbt.log'}")
    statements = json.loads(calibrated.removeprefix("CALIBRATED "))
    print(f"setup: {days} generated days x {orders_per_day} orders; statements per operation {statements} "
          f"({time.monotonic() - started:.0f} s)", flush=True)

    rng = random.Random(seed)
    plan = []
    for i in range(kills):
        op = ("daily", "backfill")[i % 2]
        plan.append((op, rng.randint(0, statements[op]), rng.uniform(0.0, 1.0)))
    results, previous = [], None
    for i, point in enumerate([*plan, ("none", 0, 0.0)]):
        op, k, delay = point
        proc, lines = _spawn(["--phase", "cycle", "--op", op], env)
        deadline = time.monotonic() + CYCLE_TIMEOUT_S
        verified = _next_line(lines, "VERIFIED ", deadline)
        if verified is None:
            proc.kill()
            proc.wait(timeout=60)
            raise RuntimeError(f"cycle {i}: recovery failed (exit {proc.returncode}); see {state / 'logs' / 'dbt.log'}")
        check = json.loads(verified.removeprefix("VERIFIED "))
        if previous is not None:
            previous["after_recovery"] = check
            results.append(previous)
            print(_describe(previous), flush=True)
        if op == "none":
            proc.wait(timeout=CYCLE_TIMEOUT_S)
            break
        if _next_line(lines, "OP-START", deadline) is None:
            proc.kill()
            raise RuntimeError(f"cycle {i}: the operation never started (exit {proc.wait(timeout=60)})")
        offset = _log_size(state)
        killed = _kill_at(proc, state, offset, k, delay, deadline)
        previous = {"kill": i + 1, "op": op, "statement": k, "delay_s": round(delay, 2), "killed": killed}
    totals = {
        "kills": sum(r["killed"] for r in results),
        "kill_points": len(results),
        "recoveries_verified": sum(_clean(r["after_recovery"]) for r in results),
        "rows_lost": sum(r["after_recovery"]["lost"] for r in results),
        "rows_duplicated": sum(r["after_recovery"]["duplicated"] + r["after_recovery"]["duplicate_keys"]
                               for r in results),
        "watermarks_above_landed": sum(len(r["after_recovery"]["watermarks_above_landed"]) for r in results),
        "backfills_left_running": sum(len(r["after_recovery"]["backfills_running"]) for r in results),
        "seconds": round(time.monotonic() - started),
    }
    return {"seed": seed, "statements_per_operation": statements, "results": results, "totals": totals}


def _kill_at(proc: subprocess.Popen, state: Path, offset: int, k: int, delay: float, deadline: float) -> bool:
    """SIGKILL `proc` `delay` s after its k-th dbt statement since `offset` (k = 0: `3 x delay`
    s after it started its operation). False if it finished first."""
    if k == 0:
        time.sleep(3 * delay)
    else:
        while _statements_since(state, offset) < k:
            if proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        time.sleep(delay)
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
            and not check["watermarks_above_landed"] and not check["backfills_running"])


def _describe(result: dict) -> str:
    check = result["after_recovery"]
    what = "killed" if result["killed"] else "finished before its kill point"
    return (f"kill {result['kill']:>2}: {result['op']:<8} statement {result['statement']:>3} +{result['delay_s']:.2f} s"
            f" {what}; recovery: {check['recovered']}; {'ok' if _clean(check) else 'FAILED'}"
            f" (lost {check['lost']}, duplicated {check['duplicated'] + check['duplicate_keys']},"
            f" watermarks above landed {check['watermarks_above_landed'] or 0},"
            f" backfills running {check['backfills_running'] or 0}; {check['rows']} fact rows)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.chaos", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=24, help="kill points, alternating daily and backfill (default 24)")
    parser.add_argument("--seed", type=int, default=7, help="seed of the data and of the kill points (default 7)")
    parser.add_argument("--orders-per-day", type=int, default=20, help="generated orders per day (default 20)")
    parser.add_argument("--state", type=Path, help="state folder (default: a new temporary one)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--phase", choices=("setup", "cycle"), help=argparse.SUPPRESS)
    parser.add_argument("--op", choices=("daily", "backfill", "none"), default="none", help=argparse.SUPPRESS)
    parser.add_argument("--days", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phase:
        return _child_main(args)
    if not 1 <= args.kills <= 200:
        parser.error("--kills must be between 1 and 200")
    if not 1 <= args.orders_per_day <= 10000:
        parser.error("--orders-per-day must be between 1 and 10000")
    state = args.state or Path(tempfile.mkdtemp(prefix="chaos_"))
    outcome = run(args.kills, args.seed, args.orders_per_day, state)
    totals = outcome["totals"]
    print(f"kills {totals['kills']} of {totals['kill_points']} kill points, recoveries verified "
          f"{totals['recoveries_verified']}, rows lost {totals['rows_lost']}, rows duplicated "
          f"{totals['rows_duplicated']}, watermarks above the landed data {totals['watermarks_above_landed']}, "
          f"backfills left running {totals['backfills_left_running']} ({totals['seconds']} s; state {state})")
    if args.out:
        args.out.write_text(json.dumps(outcome, indent=2, default=str))
    return 0 if totals["recoveries_verified"] == totals["kill_points"] else 1


if __name__ == "__main__":
    sys.exit(main())
