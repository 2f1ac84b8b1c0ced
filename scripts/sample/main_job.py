"""The main job: a day in the life of the warehouse, on the embedded Spark.

1. Generate a deterministic sample (seeded), land every day but the last, `dbt build` (seeds,
   models, data tests).
2. Land the last day, which carries late corrections, header-only changes, an out-of-order
   older version, duplicates and deletions; `dbt build` again (the incremental run).
3. Print, per incremental model, what the second run did (from Iceberg snapshots and
   changelog), each watermark before and after, and the reconciliation results.
The job starts from an empty warehouse (it drops the project's tables) so it can be rerun.
It prints a line per step and the summary; everything dbt and Spark print goes to a log file
whose path it prints first (`main` below).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pipeline import iceberg, paths, warehouse
from pipeline.dbt import NOTHING_LANDED, Dbt, DbtError, NodeResult
from sample.generate import GeneratorConfig, generate
from pipeline.land import land
from pipeline.manifest import incremental_models
from pipeline.engine import get_engine

RECONCILIATION_TESTS = ("reconcile_daily_totals", "no_unloaded_changes")


def land_day(folder: Path) -> int:
    files = sorted(folder.iterdir())
    return sum(f.rows for f in land(get_engine(), files))


def run(config: GeneratorConfig, console: Console) -> int:
    landing = paths.state_dir() / "landing"
    shutil.rmtree(landing, ignore_errors=True)
    started = time.monotonic()
    days = generate(config, landing)
    console.print(f"[bold]generated[/] {len(days)} days of source versions into {landing} (seed {config.seed})")

    dbt = Dbt(quiet=True)
    spark = get_engine()
    warehouse.reset(spark)
    for folder in days[:-1]:
        land_day(folder)
    console.print(f"[bold]landed[/] days {days[0].name} .. {days[-2].name}")
    console.print(_built("first build", dbt.invoke("build"), started))

    models = incremental_models()
    before = {m.name: iceberg.current_snapshot_id(spark, m.relation) for m in models}
    watermarks_before = iceberg.watermarks(spark)

    rows = land_day(days[-1])
    console.print(f"[bold]landed[/] {days[-1].name}: {rows} versions (late corrections, header changes, "
                  "an out-of-order version, duplicates, deletions)")
    try:
        results = dbt.invoke("build")
    except DbtError as error:
        console.print(f"[red]incremental build failed:[/] {error}")
        return 1
    console.print(_built("incremental build", results, started))
    watermarks_after = iceberg.watermarks(spark)

    table = Table(title=f"incremental run after landing {days[-1].name}")
    for column in ("model", "inserted", "updated", "deleted", "added/deleted records",
                   "changed partitions", "watermark before", "watermark after"):
        table.add_column(column, justify="left" if column.startswith(("model", "watermark")) else "right")
    for model in models:
        change = iceberg.change_since(spark, model.relation, before[model.name], model.unique_key)
        table.add_row(
            model.name, str(change.inserted), str(change.updated), str(change.deleted),
            f"{change.added_records}/{change.deleted_records}", str(change.changed_partitions),
            _ts(watermarks_before.get(model.name)), _ts(watermarks_after.get(model.name)),
        )
    console.print(table)
    console.print(_reconciliation(results))
    console.print(_quarantine(spark))
    console.print(_freshness(dbt, spark, sample_clock(config)))
    console.print(f"done in {time.monotonic() - started:.0f} s")
    return 0


def _built(step: str, results: list[NodeResult], started: float) -> str:
    kinds = ("model", "seed", "unit_test", "test")
    count = {kind: sum(1 for n in results if n.resource_type == kind) for kind in kinds}
    warned = sum(1 for n in results if n.resource_type == "test" and n.status == "warn")
    return (f"[bold]{step}[/]: {count['model']} models, {count['seed']} seeds, {count['unit_test']} unit tests,"
            f" {count['test']} data tests ({warned} warned) in {time.monotonic() - started:.0f} s since the start")


def sample_clock(config: GeneratorConfig) -> datetime:
    """The sample's own 'now': the end of its last generated day (UTC)."""
    return datetime.combine(config.start_date + timedelta(days=config.days), datetime.min.time(), UTC)


def _reconciliation(results: list[NodeResult]) -> Table:
    table = Table(title="reconciliation (dbt data tests)")
    table.add_column("test")
    table.add_column("result")
    table.add_column("failing rows", justify="right")
    for node in results:
        if node.resource_type == "test" and node.name.startswith(RECONCILIATION_TESTS):
            colour = "green" if node.status == "pass" else "red"
            table.add_row(node.name, f"[{colour}]{node.status}[/]", str(node.failures or 0))
    return table


def _quarantine(spark) -> str:
    """Landed versions not loaded (audit_quarantined_rows), per table and reason."""
    rows = spark.sql("select source_name, source_table, reason, count(*) as n from audit.audit_quarantined_rows"
                     " group by 1, 2, 3 order by 1, 2, 3").collect()
    if not rows:
        return "quarantine (audit.audit_quarantined_rows): no landed row was set aside"
    return "quarantine (audit.audit_quarantined_rows): " + "; ".join(
        f"{r.source_name}.{r.source_table} {r.n} x {r.reason}" for r in rows)


def _freshness(dbt: Dbt, spark, clock: datetime) -> Table:
    """Each source's latest update (`dbt source freshness` on the update timestamps) and each
    pipeline's watermark, their age measured against the sample's own clock, not today's: the
    sample's update times are fixed in the past (its dates are the tests' too), so against today
    every source would be past its `error_after`. The status applies the source's declared
    thresholds to that age, as dbt does to the age against now."""
    table = Table(title=f"freshness against the sample's clock: {clock:%Y-%m-%d %H:%M} UTC")
    for column in ("source / pipeline", "status", "latest update", "age / lag"):
        table.add_column(column)
    for found in dbt.freshness():
        latest = found.max_loaded_at
        if latest is None:  # nothing landed yet (Dbt.freshness reads dbt's sentinel for no rows)
            table.add_row(found.source, f"[dim]{NOTHING_LANDED}[/]", "-", "-")
            continue
        age = (clock - (latest if latest.tzinfo else latest.replace(tzinfo=UTC))).total_seconds()
        status = _freshness_status(age, found.warn_after_seconds, found.error_after_seconds)
        colour = {"pass": "green", "warn": "yellow"}.get(status, "red")
        table.add_row(found.source, f"[{colour}]{status}[/]", _ts(latest), _age(age))
    for row in spark.sql(f"select pipeline_name, watermark_ts, unix_timestamp(timestamp'{clock:%Y-%m-%d %H:%M:%S}')"
                         " - unix_timestamp(watermark_ts) as lag from control.etl_watermark order by 1").collect():
        table.add_row(f"pipeline {row.pipeline_name}", "watermark", _ts(row.watermark_ts), _age(row.lag))
    table.caption = "(the end of the sample's last day; against today's clock its fixed dates are all stale)"
    return table


def _freshness_status(age: float, warn_after: float | None, error_after: float | None) -> str:
    if error_after is not None and age > error_after:
        return "error"
    if warn_after is not None and age > warn_after:
        return "warn"
    return "pass"


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds / 86400:.1f} d" if seconds >= 86400 else f"{seconds / 3600:.1f} h"


def _ts(value: object) -> str:
    return "-" if value is None else str(value)


def main(config: GeneratorConfig | None = None) -> int:
    """The job for a person at a terminal: the step lines and the summary on the terminal, and
    everything else (dbt's log lines, the JVM's and Spark's) in `<state>/logs/main_job.log`.
    Standard output and error are moved to that file at the file-descriptor level before Spark
    starts, so the JVM (which inherits them) writes there too."""
    log_path = paths.state_dir() / "logs" / "main_job.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    terminal = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    console = Console(file=terminal, width=None if terminal.isatty() else 160)
    console.print(f"full logs (dbt, Spark): {log_path}")
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with log_path.open("a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            return run(config or GeneratorConfig(), console)
        except DbtError as error:
            console.print(f"[red]{error}[/]")
            console.print(f"the failing statements are in {log_path}")
            return 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)


if __name__ == "__main__":
    sys.exit(main())
