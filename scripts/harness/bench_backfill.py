"""Benchmark: a 30-window backfill through the in-process runner against a loop of one
`dbt run --vars` subprocess per window, on the same data, on the same machine, in one run.

    .venv/bin/python -m harness.bench_backfill [--days 31] [--orders-per-day 100] [--out FILE]

Phases, each in its own process (embedded Derby admits one JVM per metastore):
1. setup: generate and land `--days` days, build, then land corrections stamped before the
   daily window on every day, so each window has real rows to restate; then compact the
   tables (`pipeline maintain`, as a nightly job would);
2. runner: `Backfill` over the first 30 days in 1-day windows (branches, gate, publish), timed
   per window, then rolled back so the loop starts from the same tables;
3. loop: 30 x `dbt run --select <same models> --vars {window}` as new processes.
Overhead per window = wall time (the runner's: all but its gate) minus the execution time dbt
reports for its models (Spark's own work), divided by the windows. Prints a markdown table and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from pipeline import paths

WINDOWS = int(os.environ.get("BENCH_WINDOWS", "30"))  # set by --windows for the child phases
MODELS = ["fct_order_item", "fct_orders"]
START = date(2025, 1, 1)


def _setup(days: int, orders_per_day: int) -> dict:
    from pipeline.dbt import Dbt
    from sample.generate import GeneratorConfig, generate
    from pipeline.land import land
    from pipeline.spark import get_spark

    spark = get_spark()
    dbt = Dbt(quiet=True)
    for folder in generate(GeneratorConfig(days=days, orders_per_day=orders_per_day, seed=3), paths.state_dir() / "landing"):
        land(spark, sorted(folder.iterdir()))
    dbt.invoke("build")
    # one correction per day, stamped one second after the day's last line version (of an order
    # inside the backfill range): newer than the current version, mostly older than the daily
    # window, so only a backfill restates it
    spark.sql("""
        insert into raw.order_items
        select order_id, order_item_id, product_id, quantity + 10, unit_price, discount_amount,
               updated_at + interval 1 second, false, current_timestamp(), 'bench-corrections'
        from (
            select *, row_number() over (partition by cast(updated_at as date) order by updated_at desc) as rn
            from staging.stg_shop__order_items
            where not is_deleted and order_id in (
                select order_id from staging.stg_shop__orders where order_date < date'{end}')
        ) where rn = 1
    """.format(end=(START + timedelta(days=WINDOWS)).isoformat()))
    # what a nightly `pipeline maintain` does: compact the small files landing and MERGEs leave
    # (31 landed days of raw.order_items are 120 files); both phases start from these tables
    from pipeline.maintain import maintain

    compacted = maintain(spark, expire_older_than=None)
    return {"files_before_compaction": {r.table: r.files_before for r in compacted},
            "files_after_compaction": {r.table: r.files_after for r in compacted}}


def _runner() -> dict:
    from rich.console import Console

    from pipeline.backfill.runner import Backfill
    from pipeline.dbt import Dbt
    from pipeline.spark import get_spark

    dbt = Dbt(quiet=True)
    windows: list[dict] = []
    real_invoke = dbt.invoke

    def timed(*args, **kwargs):
        started = time.perf_counter()
        results = real_invoke(*args, **kwargs)
        windows.append({"command": args[0], "wall_s": time.perf_counter() - started,
                        "dbt_node_s": sum(r.execution_time for r in results)})
        return results

    dbt.invoke = timed  # type: ignore[method-assign]
    backfill = Backfill(dbt, get_spark(), Console(file=open(os.devnull, "w")))
    plan = backfill.plan(START.isoformat(), (START + timedelta(days=WINDOWS)).isoformat(), " ".join(MODELS), 1)
    started = time.perf_counter()
    run_id = backfill.start(plan, "benchmark")
    total = time.perf_counter() - started
    status = backfill.status_of(run_id)
    if status == "published":  # put the tables back, so the loop starts from the same state
        backfill.rollback(run_id)
    runs = [w for w in windows if w["command"] == "run"]
    return {"status": status, "total_s": total, "windows": runs,
            "gate_s": sum(w["wall_s"] for w in windows if w["command"] == "test")}


def _loop() -> dict:
    dbt = Path(sys.executable).with_name("dbt")
    runs = []
    started = time.perf_counter()
    for index in range(WINDOWS):
        start = START + timedelta(days=index)
        window = json.dumps({"backfill_start": start.isoformat(), "backfill_end": (start + timedelta(days=1)).isoformat()})
        t0 = time.perf_counter()
        subprocess.run([str(dbt), "--quiet", "run", "--select", *MODELS, "--vars", window,
                        "--project-dir", str(paths.PROJECT_DIR), "--profiles-dir", str(paths.PROFILES_DIR),
                        "--log-path", str(paths.state_dir() / "logs")],
                       check=True, cwd=paths.PROJECT_DIR, env=os.environ.copy())
        wall = time.perf_counter() - t0
        results = json.loads((paths.target_dir() / "run_results.json").read_text())["results"]
        runs.append({"wall_s": wall, "dbt_node_s": sum(r["execution_time"] for r in results)})
    return {"total_s": time.perf_counter() - started, "windows": runs}


def _child(phase: str, args: argparse.Namespace) -> dict:
    out = Path(args.state) / f"{phase}.json"
    subprocess.run([sys.executable, "-m", "harness.bench_backfill", "--phase", phase, "--state", args.state,
                    "--days", str(args.days), "--orders-per-day", str(args.orders_per_day)], check=True)
    return json.loads(out.read_text()) if out.exists() else {}


def main() -> int:
    global WINDOWS
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=31, help="generated days (>= 31; default %(default)s)")
    parser.add_argument("--orders-per-day", type=int, default=100, help="default %(default)s")
    parser.add_argument("--windows", type=int, default=WINDOWS,
                        help="one-day windows to backfill (default %(default)s; fewer for a quick look)")
    parser.add_argument("--out", type=Path, default=Path("bench_backfill.json"), help="JSON report (default %(default)s)")
    parser.add_argument("--state", help=argparse.SUPPRESS)
    parser.add_argument("--phase", choices=("setup", "runner", "loop"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        os.environ["PIPELINE_STATE_DIR"] = args.state
        paths.export_environment()
        result = {"setup": lambda: _setup(args.days, args.orders_per_day), "runner": _runner, "loop": _loop}[args.phase]()
        if result is not None:
            (Path(args.state) / f"{args.phase}.json").write_text(json.dumps(result))
        return 0
    WINDOWS = args.windows
    os.environ["BENCH_WINDOWS"] = str(WINDOWS)  # the child phases read it
    if WINDOWS < 1 or args.days < WINDOWS + 1:
        parser.error(f"--windows must be at least 1 and --days at least {WINDOWS + 1}")
    args.state = tempfile.mkdtemp(prefix="bench_backfill_")
    t0 = time.perf_counter()
    setup = _child("setup", args)
    setup_s = time.perf_counter() - t0
    runner = _child("runner", args)
    loop = _child("loop", args)

    def overhead(phase: dict) -> float:
        """Per window: everything but dbt's node time. For the runner that includes its own
        bookkeeping, branch creation and publish (total minus gate minus node time), a bound
        from above; for the loop, each subprocess's wall time minus its node time."""
        node_s = sum(w["dbt_node_s"] for w in phase["windows"])
        busy = phase["total_s"] - phase.get("gate_s", 0.0)
        return (busy - node_s) / len(phase["windows"])

    runner_windows_s = sum(w["wall_s"] for w in runner["windows"])
    report = {
        "machine": f"{os.cpu_count()} cores", "days": args.days, "orders_per_day": args.orders_per_day,
        "windows": WINDOWS, "models": MODELS, "setup_s": setup_s, "setup": setup,
        "runner": {"status": runner["status"], "total_s": runner["total_s"], "windows_s": runner_windows_s,
                   "gate_s": runner["gate_s"], "overhead_per_window_s": overhead(runner)},
        "loop": {"total_s": loop["total_s"], "overhead_per_window_s": overhead(loop)},
    }
    report["runner_vs_loop"] = runner["total_s"] / loop["total_s"]
    args.out.write_text(json.dumps(report, indent=2))
    print(f"| {WINDOWS} one-day windows, {args.days} days x {args.orders_per_day} orders, {os.cpu_count()} cores "
          "| wall time | per-window overhead above dbt's node time |")
    print("|---|---|---|")
    print(f"| in-process runner (windows + gate + publish, status {runner['status']}) | {runner['total_s']:.0f} s "
          f"(windows {runner_windows_s:.0f} s, gate {runner['gate_s']:.0f} s) | {overhead(runner):.2f} s |")
    print(f"| loop of `dbt run --vars` subprocesses | {loop['total_s']:.0f} s | {overhead(loop):.2f} s |")
    print(f"\nrunner / loop wall time: {report['runner_vs_loop']:.0%} (target <= 30%); JSON in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
