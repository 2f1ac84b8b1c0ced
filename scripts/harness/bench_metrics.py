"""What a benchmark phase cost: Spark's event log, Iceberg's snapshot summaries, peak memory.

- Spark task time, rows and bytes read: the `SparkListenerTaskEnd` events of the application's
  event log (`spark.eventLog.enabled`), attributed to a phase by their launch time. dbt runs its
  SQL on its own thread, so time is the only attribution that works for every statement.
- Iceberg scan metrics (data files scanned and skipped, bytes of the files scanned) per table:
  the driver metrics of every `BatchScan` node, from the SQL events of the same log
  (`SparkListenerSQLExecutionStart` / `...AdaptiveExecutionUpdate` name the accumulators,
  `SparkListenerDriverAccumUpdates` carry their values), attributed by the execution's start.
- Peak memory: `VmHWM` of `/proc/<pid>/status`, reset at a phase's start by writing `5` to
  `/proc/<pid>/clear_refs` (Linux), for the JVM and for the Python process.

Pure functions over plain data where possible, so the tests check them without Spark.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.iceberg import deleted_records

_SCAN = re.compile(r"BatchScan (?:spark_catalog\.)?([A-Za-z0-9_]+\.[A-Za-z0-9_]+)")
# Iceberg's scan metrics (org.apache.iceberg.spark.source.metrics), by their display names
ICEBERG_SCAN_METRICS = {
    "number of result data files": "data_files_scanned",
    "number of skipped data files": "data_files_skipped",
    "total data file size (bytes)": "data_bytes_scanned",
    "number of result delete files": "delete_files_scanned",
    "total delete file size (bytes)": "delete_bytes_scanned",
    "number of row deletes applied": "row_deletes_applied",
}


@dataclass
class Window:
    """A phase's span, in epoch milliseconds."""

    name: str
    start_ms: int
    end_ms: int = 0

    def holds(self, ms: int) -> bool:
        return self.start_ms <= ms <= self.end_ms


@dataclass
class SparkCost:
    tasks: int = 0
    task_s: float = 0.0  # sum of Executor Run Time
    cpu_s: float = 0.0  # sum of Executor CPU Time
    gc_s: float = 0.0
    input_rows: int = 0
    input_bytes: int = 0
    shuffle_read_bytes: int = 0
    shuffle_write_bytes: int = 0
    output_rows: int = 0
    output_bytes: int = 0
    spilled_bytes: int = 0  # memory bytes spilled
    sql_executions: int = 0
    scans: dict[str, dict[str, int]] = field(default_factory=dict)  # table -> Iceberg scan metric -> value
    # the statements that cost most CPU: root operator, tables scanned (times), task and CPU seconds
    top_statements: list[dict] = field(default_factory=list)


TOP_STATEMENTS = 8


def parse_event_log(lines, windows: list[Window]) -> dict[str, SparkCost]:
    """Spark cost per window from the lines of an event log (JSON, one event a line)."""
    costs = {w.name: SparkCost() for w in windows}

    def window_of(ms: int) -> str | None:
        for window in windows:
            if window.holds(ms):
                return window.name
        return None

    scan_metric: dict[int, tuple[str, str]] = {}  # accumulator id -> (table, metric)
    stage_execution: dict[int, int] = {}
    statements: dict[int, dict] = {}  # execution id -> what it was and what its tasks cost
    execution_window: dict[int, str | None] = {}
    driver_values: dict[int, tuple[int, int]] = {}  # accumulator id -> (execution, value)
    task_scans = {w.name: defaultdict(lambda: defaultdict(int)) for w in windows}

    def collect(plan: dict) -> None:
        match = _SCAN.match(plan.get("simpleString") or "") if str(plan.get("nodeName", "")).startswith("BatchScan") else None
        if match:
            for metric in plan.get("metrics", []):
                name = ICEBERG_SCAN_METRICS.get(metric.get("name"))
                if name:
                    scan_metric[metric["accumulatorId"]] = (match.group(1), name)
        for child in plan.get("children", []):
            collect(child)

    for line in lines:
        if not line.strip():
            continue
        event = json.loads(line)
        kind = event.get("Event", "")
        if kind == "SparkListenerJobStart":
            execution = (event.get("Properties") or {}).get("spark.sql.execution.id")
            if execution is not None:
                for stage in event.get("Stage IDs", []):
                    stage_execution[stage] = int(execution)
        elif kind == "SparkListenerTaskEnd":
            info, metrics = event.get("Task Info", {}), event.get("Task Metrics") or {}
            name = window_of(int(info.get("Launch Time", 0)))
            if name is None:
                continue
            cost = costs[name]
            statement = statements.get(stage_execution.get(event.get("Stage ID"), -1))
            if statement is not None:
                statement["task_s"] += metrics.get("Executor Run Time", 0) / 1000
                statement["cpu_s"] += metrics.get("Executor CPU Time", 0) / 1e9
            cost.tasks += 1
            cost.task_s += metrics.get("Executor Run Time", 0) / 1000
            cost.cpu_s += metrics.get("Executor CPU Time", 0) / 1e9
            cost.gc_s += metrics.get("JVM GC Time", 0) / 1000
            cost.spilled_bytes += metrics.get("Memory Bytes Spilled", 0)
            read = metrics.get("Input Metrics") or {}
            cost.input_rows += read.get("Records Read", 0)
            cost.input_bytes += read.get("Bytes Read", 0)
            shuffle_read = metrics.get("Shuffle Read Metrics") or {}
            cost.shuffle_read_bytes += shuffle_read.get("Remote Bytes Read", 0) + shuffle_read.get("Local Bytes Read", 0)
            cost.shuffle_write_bytes += (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0)
            written = metrics.get("Output Metrics") or {}
            cost.output_rows += written.get("Records Written", 0)
            cost.output_bytes += written.get("Bytes Written", 0)
            for accumulable in info.get("Accumulables", []):  # Iceberg's task-side scan metrics
                if accumulable.get("ID") in scan_metric and accumulable.get("Update") is not None:
                    table, metric = scan_metric[accumulable["ID"]]
                    task_scans[name][table][metric] += int(float(accumulable["Update"]))
        elif kind.endswith("SparkListenerSQLExecutionStart"):
            name = window_of(int(event.get("time", 0)))
            execution_window[event["executionId"]] = name
            if name is not None:
                costs[name].sql_executions += 1
                plan = event.get("sparkPlanInfo") or {}
                statements[event["executionId"]] = {
                    "window": name, "operator": _operator(plan), "scans": _scanned_tables(plan),
                    "task_s": 0.0, "cpu_s": 0.0}
            collect(event.get("sparkPlanInfo") or {})
        elif kind.endswith("SparkListenerSQLAdaptiveExecutionUpdate"):
            collect(event.get("sparkPlanInfo") or {})
        elif kind.endswith("SparkListenerDriverAccumUpdates"):
            for accumulator, value in event.get("accumUpdates", []):
                if accumulator in scan_metric:
                    driver_values[accumulator] = (event["executionId"], int(value))
    scans = {w.name: defaultdict(lambda: defaultdict(int)) for w in windows}
    for accumulator, (execution, value) in driver_values.items():
        name = execution_window.get(execution)
        if name is not None:
            table, metric = scan_metric[accumulator]
            scans[name][table][metric] += value
    for name, cost in costs.items():
        for table, metrics in task_scans[name].items():
            for metric, value in metrics.items():
                scans[name][table][metric] += value
        cost.scans = {t: dict(sorted(m.items())) for t, m in sorted(scans[name].items())}
        mine = sorted((st for st in statements.values() if st["window"] == name), key=lambda st: -st["cpu_s"])
        cost.top_statements = [{"operator": st["operator"], "scans": st["scans"], "task_s": round(st["task_s"], 1),
                                "cpu_s": round(st["cpu_s"], 1)} for st in mine[:TOP_STATEMENTS]]
    return costs


def _operator(plan: dict) -> str:
    """The plan's first operator below the adaptive/command wrappers (ReplaceData, WriteDelta,
    AppendData, HashAggregate...)."""
    while plan.get("nodeName") in ("AdaptiveSparkPlan", "CommandResult", "Execute InsertIntoHadoopFsRelationCommand") \
            and plan.get("children"):
        plan = plan["children"][0]
    return str(plan.get("nodeName", "?"))


def _scanned_tables(plan: dict) -> dict[str, int]:
    found: dict[str, int] = defaultdict(int)

    def walk(node: dict) -> None:
        match = _SCAN.match(node.get("simpleString") or "") if str(node.get("nodeName", "")).startswith("BatchScan") else None
        if match:
            found[match.group(1)] += 1
        for child in node.get("children", []):
            walk(child)

    walk(plan)
    return dict(sorted(found.items()))


def event_log_lines(folder: Path):
    """The lines of the one finished event log in `folder` (Spark writes one file per application)."""
    logs = sorted(p for p in Path(folder).iterdir() if p.is_file() and not p.name.endswith(".inprogress"))
    if len(logs) != 1:
        raise RuntimeError(f"expected one finished Spark event log in {folder}, found {[p.name for p in logs]}")
    with logs[0].open(encoding="utf-8") as handle:
        yield from handle


# -- peak memory ---------------------------------------------------------------------------------
def reset_peak(pid: int | str = "self") -> bool:
    """Reset the process's peak resident set (VmHWM) to its current size; False where Linux
    does not allow it."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mb(pid: int | str = "self") -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def now_ms() -> int:
    return int(time.time() * 1000)


# -- Iceberg snapshots -----------------------------------------------------------------------------
SUMMARY_FIGURES = {
    "added-records": "added_records", "deleted-records": "deleted_records",
    "added-data-files": "added_files", "deleted-data-files": "deleted_files",
    "added-delete-files": "added_delete_files", "changed-partition-count": "changed_partitions",
    "added-files-size": "added_bytes", "removed-files-size": "removed_bytes",
}


def snapshot_figures(spark, tables: list[str], start_ms: int, end_ms: int) -> dict[str, dict[str, int]]:
    """Per table, the number of snapshots committed in [start, end] (any branch) and the sums of
    their summary figures; tables without a snapshot in the window are left out."""
    figures = {}
    for table in tables:
        if not spark.catalog.tableExists(table):
            continue
        rows = spark.sql(f"select operation, summary from {table}.snapshots where unix_millis(committed_at) "
                         f"between {int(start_ms)} and {int(end_ms)}").collect()
        if not rows:
            continue
        totals = {"snapshots": len(rows), "operations": sorted({r.operation for r in rows})}
        for key, name in SUMMARY_FIGURES.items():
            totals[name] = sum(int(r.summary.get(key, 0) or 0) for r in rows)
        # rows that left the table: rewritten files' rows (copy-on-write) and position deletes
        # (merge-on-read), as the run records count them
        totals["deleted_records"] = sum(deleted_records(r.summary) for r in rows)
        figures[table] = totals
    return figures
