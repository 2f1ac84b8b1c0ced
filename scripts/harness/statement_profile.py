"""Where a pytest run's time goes: every Spark statement, dbt invocation and subprocess, per test.

A pytest plugin and its report (docs/guides/run-the-tests.md, "Where an integration test's time
goes"):

    PYTHONPATH=scripts STATEMENT_PROFILE=/tmp/profile.jsonl \\
        .venv/bin/python -m pytest -p harness.statement_profile -m integration ...
    .venv/bin/python -m harness.statement_profile /tmp/profile.jsonl [--test SUBSTRING]

The plugin wraps `SparkSession.sql`, `DataFrame.collect`, `pipeline.dbt.Dbt.invoke / freshness /
ls` and `subprocess.run` of the test process, and appends one JSON line per call: the test and
its phase (setup / call / teardown), the kind, the seconds, whether it ran inside a dbt
invocation, and the statement's first 200 characters (dbt's query comment cut). Statements of
other processes (a subprocess's JVM, a Thrift Server) are not seen; their subprocess is.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter, defaultdict
from typing import IO

_state: dict = {"test": None, "phase": None, "dbt_depth": 0, "out": None}
_QUERY_COMMENT = re.compile(r"^\s*/\*.*?\*/\s*", re.S)


def _record(kind: str, seconds: float, what: str) -> None:
    out: IO[str] = _state["out"]
    out.write(json.dumps({"test": _state["test"], "phase": _state["phase"], "kind": kind,
                          "seconds": round(seconds, 4), "in_dbt": _state["dbt_depth"] > 0,
                          "what": _QUERY_COMMENT.sub("", what)[:200]}) + "\n")


def _timed(kind: str, original, describe, dbt: bool = False):
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        if dbt:
            _state["dbt_depth"] += 1
        try:
            return original(*args, **kwargs)
        finally:
            if dbt:
                _state["dbt_depth"] -= 1
            _record(kind, time.perf_counter() - started, describe(args, kwargs))
    return wrapper


def pytest_configure(config) -> None:
    import subprocess

    from pyspark.sql import DataFrame, SparkSession

    from pipeline.dbt import Dbt

    path = os.environ.get("STATEMENT_PROFILE")
    if not path:
        raise SystemExit("harness.statement_profile: set STATEMENT_PROFILE to the JSON-lines file to write")
    _state["out"] = open(path, "a", buffering=1)
    SparkSession.sql = _timed("sql", SparkSession.sql,
                              lambda a, k: " ".join(str(a[1] if len(a) > 1 else k.get("sqlQuery", "")).split()))
    DataFrame.collect = _timed("collect", DataFrame.collect, lambda a, k: "")
    for name in ("invoke", "freshness", "ls"):
        setattr(Dbt, name, _timed("dbt", getattr(Dbt, name),
                                  lambda a, k, n=name: f"{n} {' '.join(map(str, a[1:]))}", dbt=True))

    def command(a, k) -> str:
        args = a[0] if a else k.get("args", "")
        return " ".join(map(str, args if isinstance(args, list | tuple) else [args]))[-200:]

    subprocess.run = _timed("subprocess", subprocess.run, command)


def _phase(name: str):
    import pytest

    @pytest.hookimpl(hookwrapper=True)
    def hook(item):
        _state.update(test=item.nodeid, phase=name)
        started = time.perf_counter()
        yield
        _record("phase", time.perf_counter() - started, name)
    return hook


pytest_runtest_setup = _phase("setup")
pytest_runtest_call = _phase("call")
pytest_runtest_teardown = _phase("teardown")


def report(path: str, test: str = "") -> str:
    """Per module: seconds and tests; per test phase over 3 s: dbt, Spark and subprocess time;
    the whole run's split; the statements that took longest in total, by their first words."""
    rows = [json.loads(line) for line in open(path) if line.strip()]
    rows = [r for r in rows if test in (r["test"] or "")]
    lines = []
    modules: dict[str, float] = defaultdict(float)
    tests: Counter = Counter()
    phases: dict[tuple, Counter] = defaultdict(Counter)
    for r in rows:
        key = (r["test"], r["phase"])
        if r["kind"] == "phase":
            modules[r["test"].split("::")[0]] += r["seconds"]
            tests[r["test"].split("::")[0]] += r["phase"] == "call"
            phases[key]["total"] += r["seconds"]
        elif r["kind"] in ("sql", "collect"):
            phases[key]["dbt_spark" if r["in_dbt"] else "test_spark"] += r["seconds"]
            phases[key]["statements"] += r["kind"] == "sql"
        else:
            phases[key][r["kind"]] += r["seconds"]
            phases[key][f"{r['kind']}_calls"] += 1
    total = sum(modules.values())
    spark_in_dbt = sum(c["dbt_spark"] for c in phases.values())
    dbt = sum(c["dbt"] for c in phases.values())
    lines.append(f"{total:.0f} s in {sum(tests.values())} tests; dbt {dbt:.0f} s in "
                 f"{sum(c['dbt_calls'] for c in phases.values())} invocations (Spark {spark_in_dbt:.0f} s, dbt's own "
                 f"{dbt - spark_in_dbt:.0f} s); the tests' own Spark {sum(c['test_spark'] for c in phases.values()):.0f} s;"
                 f" subprocesses {sum(c['subprocess'] for c in phases.values()):.0f} s")
    lines.append("\nseconds  tests  module")
    lines += [f"{s:7.0f}  {tests[m]:5d}  {m}" for m, s in sorted(modules.items(), key=lambda x: -x[1])]
    lines.append("\nseconds  dbt (calls)  dbt's Spark  tests' Spark  subprocess  phase  test")
    for (name, phase), c in sorted(phases.items(), key=lambda x: -x[1]["total"]):
        if c["total"] >= 3:
            lines.append(f"{c['total']:7.0f}  {c['dbt']:5.0f} ({c['dbt_calls']:3d})  {c['dbt_spark']:11.0f}"
                         f"  {c['test_spark']:12.0f}  {c['subprocess']:10.0f}  {phase:8}  {name}")
    by_statement: Counter = Counter()
    count: Counter = Counter()
    for r in rows:
        if r["kind"] == "sql":
            words = re.sub(r"\d+", "N", " ".join(r["what"].lower().split()[:3]))
            by_statement[words] += r["seconds"]
            count[words] += 1
    lines.append("\nseconds  count  statement (first words; the statement's own call, its collect apart)")
    lines += [f"{s:7.1f}  {count[w]:5d}  {w}" for w, s in by_statement.most_common(25)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.statement_profile", description=report.__doc__)
    parser.add_argument("file", help="the JSON-lines file a run with `-p harness.statement_profile` wrote")
    parser.add_argument("--test", default="", help="only the tests whose node id contains this")
    args = parser.parse_args(argv)
    print(report(args.file, args.test))
    return 0


if __name__ == "__main__":
    sys.exit(main())
