"""dbt, in process: one dbtRunner, invocations one after another, sharing the Spark session.

Modelled on astronomer-cosmos's runner: raise on `result.exception`, collect the nodes that
failed from `result.result`. A new `dbt` process costs a JVM start (about 10 s); an in-process
invocation after the first costs about 3 s.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, cast

from dbt.cli.main import dbtRunner, dbtRunnerResult
from dbt.contracts.graph.manifest import Manifest

from pipeline import paths
from pipeline.engine import get_engine

# dbt's saved state for partial parsing, in its target folder; and how many per set of
# parse-relevant arguments Dbt keeps beside it (_parse_state)
PARTIAL_PARSE_FILE = "partial_parse.msgpack"
PARSE_STATES_KEPT = 8
FAILED_STATUSES = {"error", "fail", "runtime error", "skipped"}
# a source's freshness status when its table has no rows (Dbt.freshness): not a staleness
NOTHING_LANDED = "nothing landed yet"


class DbtError(RuntimeError):
    def __init__(self, command: list[str], failures: list[str], exception: BaseException | None = None) -> None:
        self.command = command
        self.failures = failures
        self.exception = exception  # raised by dbt itself (not a node that failed), else None
        detail = "; ".join(failures) if failures else repr(exception)
        super().__init__(f"dbt {' '.join(command)} failed: {detail}")


@dataclass(frozen=True)
class NodeResult:
    unique_id: str
    name: str
    resource_type: str
    status: str
    failures: int | None
    message: str | None
    execution_time: float = 0.0  # seconds dbt spent executing the node
    attached_node: str | None = None  # a data test's model (unique id), else None
    generic_test: str | None = None  # a generic data test's test (`reconcile_daily_totals`), else None
    compiled_code: str | None = None  # a data test's select of its failing rows, as dbt compiled it


@dataclass(frozen=True)
class Freshness:
    source: str  # source_name.table
    status: str  # dbt's (pass / warn / error / runtime error), or NOTHING_LANDED
    max_loaded_at: datetime | None  # None: nothing landed yet, or dbt could not tell
    age_seconds: float | None
    # the source's declared `freshness:` thresholds in seconds (None: not declared)
    warn_after_seconds: float | None = None
    error_after_seconds: float | None = None


class Dbt:
    def __init__(self, quiet: bool = False, log_path: Path | None = None, project_dir: Path | None = None) -> None:
        """`log_path`: dbt's log folder, by default the state folder's `logs` (a process that runs
        dbt beside another one of the same state folder gives its own). `project_dir`: another
        dbt project than the tools' (paths.PROJECT_DIR), with its own target folder in it."""
        paths.export_environment()
        self._logs = log_path
        self._project = project_dir
        self._listeners: list = []  # listening()
        get_engine()  # embedded: the session is created first, so dbt-spark's session method reuses it
        self._runner = dbtRunner()
        self._quiet = quiet

    @property
    def _log_path(self) -> str:
        return str(self._logs or paths.state_dir() / "logs")

    def _full(self, command: list[str]) -> list[str]:
        full = ["--log-path", self._log_path] + (["--quiet"] if self._quiet else [])
        return full + command + self._project_args()

    def _project_args(self) -> list[str]:
        """The project every invocation of this dbt works on: its own (`project_dir`, with its
        target folder), else the tools'."""
        if self._project is not None:
            return [
                "--project-dir",
                str(self._project),
                "--profiles-dir",
                str(paths.PROFILES_DIR),
                "--target-path",
                str(self._project / "target"),
            ]
        return ["--project-dir", str(paths.PROJECT_DIR), "--profiles-dir", str(paths.PROFILES_DIR)]

    def _invoke_runner(self, args: list[str]) -> dbtRunnerResult:
        callbacks = self._runner.callbacks
        if self._listeners:
            self._runner.callbacks = [*(callbacks or []), *self._listeners]
        try:
            if self._project is not None:  # its own target folder: dbt's own partial parse
                return self._runner.invoke(args)
            with _parse_state(args):
                return self._runner.invoke(args)
        finally:
            self._runner.callbacks = callbacks

    @contextmanager
    def listening(self, callback) -> Iterator[None]:
        """dbt's events of every invocation inside the block, a pinned manifest's too, passed to
        `callback` as they happen (in the invoking thread: a SQLQuery event comes before its
        statement is sent)."""
        self._listeners.append(callback)
        try:
            yield
        finally:
            self._listeners.remove(callback)

    @contextmanager
    def pinned_manifest(self) -> Iterator[None]:
        """Parse the project once; every invocation inside the block runs on that manifest.

        dbt re-parses the whole project whenever `--vars` differ from the previous invocation's
        (about 0.8 s here, measured in the backfill benchmark's log): a backfill passes new vars
        for every window. A pinned manifest also means every window runs the same SQL, even if
        a model file is edited while the backfill runs. Vars are still read at compile time."""
        result = self._invoke_runner(self._full(["parse"]))
        if result.exception is not None or not result.success:
            raise DbtError(["parse"], [], result.exception)
        unpinned = self._runner
        self._runner = dbtRunner(manifest=cast(Manifest, result.result))  # what `parse` returns
        try:
            yield
        finally:
            self._runner = unpinned

    def invoke(self, *args: str, check: bool = True) -> list[NodeResult]:
        command = list(args)
        result = self._invoke_runner(self._full(command))
        if result.exception is not None:
            raise DbtError(command, [], result.exception)
        nodes = _node_results(result)
        failures = [
            f"{n.name}: {n.status}" + (f" ({n.message})" if n.message else "")
            for n in nodes
            if n.status in FAILED_STATUSES
        ]
        if check and (failures or not result.success):
            raise DbtError(command, failures)
        return nodes

    def invoke_logging(self, prefix: str, *args: str) -> tuple[list[NodeResult], list[str]]:
        """`invoke`, and the messages of the invocation's `log()` and `exceptions.warn()` calls
        that start with `prefix` (dbt's JinjaLogInfo and JinjaLogWarning events, caught by a
        callback: whatever the log level, and whatever dbt's log file rotation), the prefix cut."""
        caught: list[str] = []

        def catch(event) -> None:
            if event.info.name in ("JinjaLogInfo", "JinjaLogWarning") and event.data.msg.startswith(prefix):
                caught.append(event.data.msg[len(prefix) :])

        callbacks = self._runner.callbacks
        self._runner.callbacks = [*(callbacks or []), catch]
        try:
            return self.invoke(*args), caught
        finally:
            self._runner.callbacks = callbacks

    def freshness(self) -> list[Freshness]:
        """`dbt source freshness`: per source table, its status (pass / warn / error / runtime
        error), the greatest `loaded_at_field` (the update timestamp) and its age. A stale source
        is a finding, not a failure of this call. A table with no rows (nothing landed yet) is
        NOTHING_LANDED with no update and no age: dbt reads its null max() as "infinitely long
        ago" (dbt-adapters' `_create_freshness_response`: 0001-01-01 00:00 UTC, an age of about
        740,000 days, so `error` wherever `error_after` is declared), which is not staleness."""
        # sources.json goes to dbt's own target folder (a custom --output path is deprecated in dbt 1.11)
        command = ["source", "freshness"]
        result = self._invoke_runner(self._full(command))
        if result.exception is not None:
            raise DbtError(command, [], result.exception)
        found = []
        for item in getattr(result.result, "results", None) or []:
            if getattr(item.node, "resource_type", None) != "source":  # on-run-start/end hooks
                continue
            status, latest, age = str(item.status), getattr(item, "max_loaded_at", None), getattr(item, "age", None)
            if latest is not None and latest.replace(tzinfo=None) == datetime.min:
                status, latest, age = NOTHING_LANDED, None, None
            found.append(
                Freshness(
                    source=f"{item.node.source_name}.{item.node.name}",
                    status=status,
                    max_loaded_at=latest,
                    age_seconds=age,
                    warn_after_seconds=_threshold_seconds(item.node, "warn_after"),
                    error_after_seconds=_threshold_seconds(item.node, "error_after"),
                )
            )
        return sorted(found, key=lambda f: f.source)

    def show(self, inline: str) -> list[dict]:
        """`dbt show --inline SQL`, every row (no limit), as dicts: the rows of a select that a
        macro renders (Jinja, the graph, run_query), read from Python without a copy of its SQL."""
        result = self._invoke_silent(["show", "--inline", inline, "--limit", "-1"])
        ran: Any = result.result  # a RunExecutionResult: dbt types the result of every command as one union
        [shown] = [r for r in ran.results if r.node.name == "inline_query"]
        table = shown.agate_table
        return [dict(zip(table.column_names, row)) for row in table.rows]

    def compiled(self, inline: str) -> str:
        """`dbt compile --inline SQL`: the SQL a macro renders (Jinja, the graph, run_query), to
        run from Python apart, in pieces of the caller's choosing."""
        result = self._invoke_silent(["compile", "--inline", inline])
        ran: Any = result.result  # a RunExecutionResult (as in show)
        [compiled] = [r for r in ran.results if r.node.name == "inline_query"]
        return compiled.node.compiled_code

    @staticmethod
    def last_invocation_id() -> str:
        """The id of the latest dbt invocation of this process (`invocation_id` in its Jinja)."""
        from dbt_common.invocation import get_invocation_id

        return get_invocation_id()

    def ls(self, *args: str) -> list[str]:
        """`dbt ls ... --output name`: the selected nodes' names."""
        result = self._invoke_silent(["ls", *args, "--output", "name"])
        names: Any = result.result or []  # the names listed (as in show)
        return [str(name) for name in names]

    def _invoke_silent(self, command: list[str]) -> dbtRunnerResult:
        """An invocation whose results are returned, not printed: `ls` and `show` print them even
        with --quiet, so --log-level none too. DbtError when it fails."""
        full = ["--quiet", "--log-level", "none", "--log-path", self._log_path, *command, *self._project_args()]
        result = self._invoke_runner(full)
        if result.exception is not None or not result.success:
            raise DbtError(command, [], result.exception)
        return result


def _parse_key(args: list[str]) -> str:
    """What of an invocation's arguments dbt's saved parse state depends on (a change of any
    makes dbt parse the whole project again): --vars, --target, --profile; as a file name."""
    picked = []
    for i, arg in enumerate(args):
        for flag in ("--vars", "--target", "-t", "--profile"):
            if arg == flag and i + 1 < len(args):
                picked.append((flag, args[i + 1]))
            elif arg.startswith(flag + "="):
                picked.append((flag, arg.split("=", 1)[1]))
    return hashlib.sha256(repr(picked).encode()).hexdigest()[:16]


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        status = path.stat()
    except FileNotFoundError:
        return None
    return status.st_mtime_ns, status.st_size


@contextmanager
def _parse_state(args: list[str]) -> Iterator[None]:
    """dbt's partial parse kept per set of --vars (and target, profile), not once.

    dbt keeps one saved parse state (target/partial_parse.msgpack) and parses the whole project
    again whenever an invocation's --vars differ from the state's: an invocation with vars, then
    one without, cost two full parses (6.5 s each on this project, 17 of them in one test module
    of this suite; a backfill's restate and the daily run after it likewise). Here the state each
    invocation leaves is copied to target/partial_parse/<key>.msgpack, and an invocation whose
    key has one gets that one back first. dbt checks it as it checks any saved state (files'
    hashes, dbt's version, vars, profile): what changed since is parsed again, so a copy that is
    out of date costs time, never a stale manifest. The PARSE_STATES_KEPT latest are kept."""
    target = paths.target_dir()
    current = target / PARTIAL_PARSE_FILE
    states = target / "partial_parse"
    saved = states / f"{_parse_key(args)}.msgpack"
    try:
        if saved.exists():
            _copy(saved, current)
    except OSError:
        pass  # only a cost: dbt reads what is there, or parses in full
    before = _stamp(current)
    try:
        yield
    finally:
        # bookkeeping only: whatever fails here must not fail the invocation that succeeded
        try:
            if _stamp(current) not in (None, before):  # dbt wrote a new state (not when nothing changed)
                states.mkdir(parents=True, exist_ok=True)
                _copy(current, saved)
                kept = sorted(((f.stat().st_mtime_ns, f) for f in states.glob("*.msgpack")), reverse=True)
                for _, old in kept[PARSE_STATES_KEPT:]:
                    old.unlink(missing_ok=True)
            elif saved.exists():
                os.utime(saved)  # used: kept among the latest
        except OSError:
            pass


def _copy(source: Path, dest: Path) -> None:
    """Copied whole or not at all (a reader never sees half a file)."""
    partial = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    shutil.copyfile(source, partial)
    os.replace(partial, dest)


_PERIOD_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


def _threshold_seconds(source, name: str) -> float | None:
    """A source's `freshness: {warn_after|error_after: {count, period}}` in seconds, or None."""
    threshold = getattr(getattr(source, "freshness", None), name, None)
    count, period = getattr(threshold, "count", None), getattr(threshold, "period", None)
    if count is None or period is None:
        return None
    return float(count) * _PERIOD_SECONDS[str(getattr(period, "value", period))]


def _node_results(result: dbtRunnerResult) -> list[NodeResult]:
    nodes = []
    for item in getattr(result.result, "results", None) or []:
        node = getattr(item, "node", None)
        if node is None:  # run-operation's result has no node
            continue
        nodes.append(
            NodeResult(
                unique_id=node.unique_id,
                name=node.name,
                resource_type=str(node.resource_type),
                status=str(item.status),
                failures=getattr(item, "failures", None),
                message=item.message,
                execution_time=float(getattr(item, "execution_time", 0.0) or 0.0),
                attached_node=getattr(node, "attached_node", None),
                generic_test=getattr(getattr(node, "test_metadata", None), "name", None),
                compiled_code=getattr(node, "compiled_code", None),
            )
        )
    return nodes


def parse_project() -> None:
    """`dbt parse` into the target folder, without starting Spark (parsing opens no connection):
    for what reads the project's declarations only (the landing contract, contract.load)."""
    paths.export_environment()
    command = [
        "--quiet",
        "--log-path",
        str(paths.state_dir() / "logs"),
        "parse",
        "--project-dir",
        str(paths.PROJECT_DIR),
        "--profiles-dir",
        str(paths.PROFILES_DIR),
    ]
    result: dbtRunnerResult = dbtRunner().invoke(command)
    if result.exception is not None or not result.success:
        raise DbtError(["parse"], [], result.exception)
