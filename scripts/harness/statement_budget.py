"""A dbt invocation's statement budget: per model (and hook), its Spark statements and seconds,
by what each statement is for, and the node's time outside Spark (dbt and Jinja).

Used by the benchmark's daily phase (`harness.bench_incremental`) and by
`harness.invocation_cost`; in one process with an embedded Spark, where dbt-spark's session
cursor runs `SparkSession.sql` and `DataFrame.collect` in the Python process:

    budget = StatementBudget(dbt)        # a pipeline.dbt.Dbt
    with budget.recording():
        nodes = dbt.invoke("run")
    budget.report(nodes)                 # {"models": {...}, "classes": {...}, ...}

How it attributes: dbt fires its `SQLQuery` event (with the node's unique_id) on the thread
that then runs the statement, so every `SparkSession.sql` call on that thread belongs to that
node until the next event names another; a `collect` (dbt's fetch of a select's rows) belongs to
the statement before it. A statement's class comes from its text (`CLASSES`, first match).
Statements sent outside a node (the framework's Python code between invocations) are
`(outside dbt)`; they are not part of a run's budget.
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager

_QUERY_COMMENT = re.compile(r"^\s*/\*.*?\*/\s*", re.S)

# (class, pattern on the statement's text with dbt's query comment cut, lower case, spaces
# collapsed); first match wins. The classes are the "where each second goes".
CLASSES: tuple[tuple[str, re.Pattern], ...] = tuple((name, re.compile(pattern)) for name, pattern in (
    ("watermark", r"etl_watermark"),
    ("run records", r"\brun_records\b"),
    ("scan records", r"\brun_scans\b"),
    ("merge", r"^merge into"),
    ("deltas", r"^create table \S*scratch\.\S+__deltas_|^drop table if exists \S*scratch\.\S+__deltas_"),
    ("staging", r"^(create|create or replace) table \S*scratch\.|^insert (into|overwrite) \S*scratch\.|"
                r"^drop table if exists \S*scratch\.|stage_merge_source"),
    ("scope", r"^(create|create or replace) (or replace )?(global )?temporary view|^cache table|^uncache table"),
    ("describe", r"^describe|^show (table extended|tblproperties|columns|create table)"),
    ("catalog", r"^show (schemas|databases|tables|views)|^use |^create (schema|database)"),
    ("write", r"^(create|create or replace|replace) (table|view)|^insert |^alter |^drop |^delete |^update "),
    ("control read", r"\bcontrol\.|\baudit\."),
    ("read", r"^(with|select)\b"),
))


def statement_class(sql: str) -> str:
    text = " ".join(_QUERY_COMMENT.sub("", sql).split()).lower()
    for name, pattern in CLASSES:
        if pattern.search(text):
            return name
    return "other"


class StatementBudget:
    """Records, while `recording()`, every Spark statement of the process with its node."""

    def __init__(self, dbt) -> None:
        self._dbt = dbt
        self._node: dict[int, str] = {}  # thread -> the node whose statement it runs
        self._last: dict[int, dict] = {}  # thread -> the statement a collect belongs to
        self.statements: list[dict] = []

    def _event(self, event) -> None:
        name = event.info.name
        if name in ("SQLQuery", "NodeStart", "LogHookStartLine"):
            node_info = getattr(event.data, "node_info", None)
            unique_id = getattr(node_info, "unique_id", "") if node_info is not None else ""
            if unique_id:
                self._node[threading.get_ident()] = unique_id
        elif name in ("NodeFinished", "LogHookEndLine"):
            self._node.pop(threading.get_ident(), None)

    @contextmanager
    def recording(self) -> Iterator[StatementBudget]:
        from pyspark.sql import DataFrame, SparkSession

        original_sql, original_collect = SparkSession.sql, DataFrame.collect
        budget = self

        def sql(session, query, *args, **kwargs):
            started = time.perf_counter()
            try:
                return original_sql(session, query, *args, **kwargs)
            finally:
                thread = threading.get_ident()
                record = {"node": budget._node.get(thread, "(outside dbt)"), "class": statement_class(str(query)),
                          "seconds": time.perf_counter() - started,
                          "sql": " ".join(_QUERY_COMMENT.sub("", str(query)).split())[:160]}
                budget.statements.append(record)
                budget._last[thread] = record

        def collect(frame):
            started = time.perf_counter()
            try:
                return original_collect(frame)
            finally:
                record = budget._last.get(threading.get_ident())
                if record is not None:
                    record["seconds"] += time.perf_counter() - started

        runner = self._dbt._runner
        callbacks = runner.callbacks
        runner.callbacks = [*(callbacks or []), self._event]
        SparkSession.sql, DataFrame.collect = sql, collect
        try:
            yield self
        finally:
            SparkSession.sql, DataFrame.collect = original_sql, original_collect
            runner.callbacks = callbacks
            self._node.clear()
            self._last.clear()

    def report(self, nodes=()) -> dict:
        """Per node: statements, Spark seconds by class, and (given dbt's node results) the
        node's time outside Spark; the totals per class; the statements outside dbt."""
        per_node: dict[str, dict] = defaultdict(lambda: {"statements": 0, "spark_s": 0.0,
                                                         "classes": defaultdict(lambda: [0, 0.0])})
        for s in self.statements:
            entry = per_node[_short(s["node"])]
            entry["statements"] += 1
            entry["spark_s"] += s["seconds"]
            entry["classes"][s["class"]][0] += 1
            entry["classes"][s["class"]][1] += s["seconds"]
        executed = {_short(n.unique_id): n.execution_time for n in nodes if getattr(n, "unique_id", None)}
        models = {}
        for name, entry in per_node.items():
            models[name] = {"statements": entry["statements"], "spark_s": round(entry["spark_s"], 3),
                            "node_s": round(executed[name], 3) if name in executed else None,
                            "classes": {c: {"statements": n, "seconds": round(t, 3)}
                                        for c, (n, t) in sorted(entry["classes"].items(), key=lambda i: -i[1][1])}}
        classes: dict[str, list] = defaultdict(lambda: [0, 0.0])
        for s in self.statements:
            if s["node"] != "(outside dbt)":
                classes[s["class"]][0] += 1
                classes[s["class"]][1] += s["seconds"]
        return {"models": dict(sorted(models.items(), key=lambda i: -(i[1]["node_s"] or i[1]["spark_s"]))),
                "classes": {c: {"statements": n, "seconds": round(t, 3)}
                            for c, (n, t) in sorted(classes.items(), key=lambda i: -i[1][1])}}


def _short(unique_id: str) -> str:
    """model.<project>.fct_orders -> fct_orders; operation.<p>.<p>-on-run-end-0 -> on-run-end-0;
    test.<p>.<name>.<hash> -> test <name>."""
    if unique_id.startswith("operation."):
        return "on-" + unique_id.split("-on-", 1)[-1]
    parts = unique_id.split(".")
    if parts[0] == "test" and len(parts) >= 3:
        return f"test {parts[2]}"
    return parts[-1] if "." in unique_id else unique_id


def markdown(report: dict, title: str = "Statement budget") -> list[str]:
    """Per node: statements, node s, Spark s, dbt/Jinja s (node minus Spark), the classes."""
    lines = [f"{title} (per node: statements, dbt's node time, the Spark time of its statements by class;"
             " `outside Spark` is the node's time in dbt and Jinja):", "",
             "| node | statements | node s | Spark s | outside Spark s | by class (statements, s) |",
             "|---|---|---|---|---|---|"]
    for name, m in report["models"].items():
        outside = "" if m["node_s"] is None else f"{max(m['node_s'] - m['spark_s'], 0.0):.2f}"
        node = "" if m["node_s"] is None else f"{m['node_s']:.2f}"
        classes = ", ".join(f"{c} {v['statements']} / {v['seconds']:.2f}" for c, v in m["classes"].items())
        lines.append(f"| {name} | {m['statements']} | {node} | {m['spark_s']:.2f} | {outside} | {classes} |")
    total_n = sum(v["statements"] for v in report["classes"].values())
    total_s = sum(v["seconds"] for v in report["classes"].values())
    lines += ["", f"All nodes: {total_n} statements, {total_s:.2f} s of Spark: "
              + ", ".join(f"{c} {v['statements']} / {v['seconds']:.2f} s" for c, v in report["classes"].items()), ""]
    return lines
