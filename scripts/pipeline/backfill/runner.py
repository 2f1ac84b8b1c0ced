"""Running a backfill: write-audit-publish over Iceberg branches, one dbt run per window.

A run cuts a branch (named after the run id) on every table in scope, and each window's
`dbt run --vars {backfill_start, backfill_end, backfill_branch}` sets `spark.wap.branch` on its
connection (macro use_backfill_branch), so it merges into the branches only; main, and every
reader of it, sees nothing. Then the data tests run against the branches (the gate, with the
same var). Only if they pass is every table fast-forwarded to its branch, after
checking that no table's main moved meanwhile: all published, or none. Each window is
checkpointed in the control tables, so `resume` continues after the last finished one; the
snapshot each table had before publishing is recorded, so `rollback` restores it. After a
publish or a rollback, what stands downstream of the run's models is checked and recorded: the
data tests of every model that reads them, the tables and plain incremental models left stale
(rebuilt on request), and the exposures to tell (`_downstream_health`).
"""

from __future__ import annotations

import json
import os
import queue
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Callable

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from pipeline import iceberg, paths
from pipeline.backfill import late_policy
from pipeline.backfill import plan as planning
from pipeline.backfill.control import SCHEMA, Control, Run
from pipeline.dbt import Dbt, DbtError, NodeResult
from pipeline.engine import Sql, ThriftSql
from pipeline.manifest import (IncrementalModel, code_fingerprint, downstream_of, incremental_models, models_read,
                               tested_models, unreflected_changes_relation)

# what a window's dbt run says when a concurrent commit refused its own (Iceberg's optimistic
# concurrency: the commit validated against the table's newer snapshot and found a conflicting
# change, or ran out of Iceberg's own retries): the window runs again, a bounded number of times
COMMIT_CONFLICT = re.compile(r"ValidationException|CommitFailedException|[Ff]ound conflicting|"
                             r"[Cc]onflicting (files|delete files|data files)|Cannot commit")


class _Heartbeat:
    """Writes the run's heartbeat every `every` seconds from a daemon thread until stopped.

    A failed beat is retried at the next one (the lock only goes stale after several misses).
    Control serialises its writes to backfill_runs, so a beat never races the run's own status
    updates into an Iceberg commit conflict."""

    def __init__(self, control: Control, run_id: str, owner: str, every: float) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, args=(control, run_id, owner, every),
                                        name=f"heartbeat-{run_id}", daemon=True)

    def _beat(self, control: Control, run_id: str, owner: str, every: float) -> None:
        while not self._stop.wait(every):
            try:
                control.heartbeat(run_id, owner)
            except Exception:  # noqa: BLE001 - a missed beat is retried; staleness needs several
                pass

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


class BackfillRefused(RuntimeError):
    """The backfill cannot start, resume, publish or roll back; the message says what to do."""


@dataclass(frozen=True)
class Plan:
    start: date
    end: date
    batch_days: int
    selection: str
    models: list[IncrementalModel]
    windows: list[planning.Window]
    # a restatement's: the (sign-off id, model) pairs whose signed-off keys it restates, and the
    # event dates of the late rows it holds beyond their restatement window (its gate leaves
    # them out: backfill_gate_dates)
    signoffs: tuple[tuple[str, str], ...] = ()
    held_dates: tuple[date, ...] = ()


@dataclass(frozen=True)
class DateImpact:
    """One event date of a model with keys late beyond their window: its row count and declared
    measures (`figures`) as the table holds them, and as the restatement will leave them. For a
    model over models the restatement reaches (`via`: the upstream models it reaches it
    through), and for a late model whose current state reads another restated model's table
    (`via`: those), `restated` is None: its rows are recomputed from the restated upstream rows,
    which only the restatement computes (recorded with the run, `pipeline status RUN_ID`); its
    `event_date` is None when it has none, and the figures are then the whole table's."""
    model: str
    event_date: date | None
    keys: int  # late keys on this date (current or held); reached keys for a model over models
    sample: list[str]
    figures: tuple[str, ...]  # "rows", then the declared measures
    held: tuple
    restated: tuple | None
    via: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reached:
    """A model over models (scope.changes: {model}) that restating the audit's late keys reaches
    through `via` (its upstream models among the restated and the reached): its scope keys that
    those keys' rows hold, before or after the restatement (`scope_keys`, a select of them), and
    its own keys (unique keys) on them: how many, the event dates they are on, a sample."""
    model: IncrementalModel
    via: tuple[str, ...]
    scope_keys: str
    keys: int
    first_date: date | None
    last_date: date | None
    dates: int
    sample: list[str]
    # per event date its keys are on: (date, how many keys, a sample), dates in order
    by_date: tuple[tuple[date, int, list[str]], ...] = ()


def _span(first: date | None, last: date | None, count: int) -> str:
    """A span of event dates, with how many: `2025-01-01 (1)`, `2025-01-01 .. 2025-01-03 (2)`."""
    if first is None:
        return "-"
    return (str(first) if first == last else f"{first} .. {last}") + f" ({count})"


def _plain(value: object) -> object:
    """A figure as a plan file holds it: a Decimal as its text, the rest as is."""
    from decimal import Decimal

    return f"{value.normalize():f}" if isinstance(value, Decimal) else value


def _impact_entries(impacts: list[DateImpact]) -> list[dict]:
    """The cost of the missed window as a plan file and a sign-off record it: per model and
    date, the late keys and each figure as held and as restated (None: a model over models,
    which only the restatement computes)."""
    return [{"model": i.model, "date": None if i.event_date is None else str(i.event_date), "late_keys": i.keys,
             "figures": {name: {"held": _plain(held), "restated": None if i.restated is None else _plain(after)}
                         for name, held, after in zip(i.figures, i.held, i.restated or (None,) * len(i.held))}}
            for i in impacts]


def _downstream_lines(rows: list) -> list[str]:
    """A version note's lines on what stood downstream once the run was published."""
    consumers = [r for r in rows if r.resource_type == "exposure"]
    refreshed = [r for r in rows if r.resource_type == "model" and r.status != "current"]
    tests = [r for r in rows if r.resource_type == "test"]
    failing = [r for r in tests if r.status not in ("pass", "warn")]
    lines = []
    if consumers:
        lines.append("  consumers to refresh: " + "; ".join(f"{r.name} ({r.detail})" for r in consumers))
    if refreshed:
        lines.append("  downstream models: " + "; ".join(f"{r.name} {r.status}" for r in refreshed))
    if tests:
        lines.append(f"  downstream data tests: {len(tests) - len(failing)} passed, {len(failing)} failed"
                     + "".join(f"; {r.name} {r.status} ({r.failures})" for r in failing))
    lines.extend(f"  downstream not checked: {r.detail}" for r in rows if r.resource_type == "error")
    return lines


# the framework's reconciliation tests whose failing rows carry a date: its column
_DATED_TESTS = {"reconcile_daily_totals": "reconciled_date",
                "no_unloaded_changes": "coalesce(restate_date, event_date)"}
_DATES_SHOWN = 5  # a gate's message is kept to 2,000 characters


def _date_ranges(windows: list) -> list[list[str]]:
    """A run's windows as [start, end) date pairs, adjacent ones joined (the gate's var
    backfill_gate_windows)."""
    ranges: list[list[date]] = []
    for window in sorted(windows, key=lambda w: w.window_start):
        if ranges and window.window_start <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], window.window_end)
        else:
            ranges.append([window.window_start, window.window_end])
    return [[str(start), str(end)] for start, end in ranges]


def max_batch_days() -> int:
    """var backfill_max_batch_days of the project (default 31)."""
    try:
        return int(paths.project_var("backfill_max_batch_days"))
    except KeyError:
        return 31


def max_parallel() -> int:
    """var backfill_max_parallel of the project (default 4): the most windows at once."""
    try:
        return int(paths.project_var("backfill_max_parallel"))
    except KeyError:
        return 4


def check_parallel(parallel: int, embedded: bool) -> None:
    """--parallel N: between 1 and var backfill_max_parallel; above 1 only on a Spark cluster."""
    cap = max_parallel()
    if not 1 <= parallel <= cap:
        raise planning.PlanError(f"--parallel must be between 1 and {cap} (project var backfill_max_parallel), "
                                 f"got {parallel}")
    if parallel > 1 and embedded:
        raise planning.PlanError(
            f"--parallel {parallel}: the embedded target runs one dbt invocation at a time (one process holds its "
            "Spark session and Derby metastore), so its windows run one after another; windows at once need a "
            "Spark cluster (DBT_TARGET=cluster, docs/guides/cluster-mode.md). Drop --parallel")


def split_parallel(models: list[IncrementalModel], partitioned: set[str],
                   reads: dict[str, set[str]]) -> tuple[list[str], dict[str, str]]:
    """Which of a run's models run their windows at once (`first`, in the order given) and
    which run theirs one at a time once those are done (`later`: name -> why). At once: a model
    whose table is partitioned by its event date (`partitioned`: a window writes its own dates'
    partitions), whose rows are its event date's (a model over models scoped by another key, a
    customer, reads rows of every date, which other windows are writing), and that reads
    (`reads`: name -> the models of the run it reads) no model run later."""
    later: dict[str, str] = {}
    for model in models:
        if model.name not in partitioned:
            later[model.name] = "its table is not partitioned by its event date"
        elif model.over_models and model.scope_key != model.event_date:
            later[model.name] = (f"its rows are scoped by {model.scope_key}, not by its event date {model.event_date}:"
                                 " a window reads rows of other windows' dates")
    while True:
        blocked = {m.name: sorted(reads.get(m.name, set()) & set(later)) for m in models if m.name not in later}
        blocked = {name: upstream for name, upstream in blocked.items() if upstream}
        if not blocked:
            break
        later.update({name: f"it reads {upstream[0]}, which runs later" for name, upstream in blocked.items()})
    return [m.name for m in models if m.name not in later], later


def _read_answers(n: int, worker: subprocess.Popen, answers: queue.Queue) -> None:
    """A worker's answers (JSON lines on its stdout) into `answers` as (n, answer); (n, None)
    once it ends."""
    for line in worker.stdout:
        try:
            answers.put((n, json.loads(line)))
        except ValueError:
            continue
    answers.put((n, None))


def _stop_worker(worker: subprocess.Popen) -> None:
    """A worker's stdin closed (it ends after its window), killed if it has not ended in 60 s."""
    try:
        worker.stdin.close()
    except OSError:
        pass
    try:
        worker.wait(timeout=60)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


def _owner_gone(owner: str) -> bool:
    """True if `owner` (host:pid) is a process of this host that no longer runs."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def pause_request_path() -> Path:
    """The file `pipeline backfill --pause` leaves for a running backfill of this state folder:
    it pauses at its next window boundary and takes the file."""
    return paths.state_dir() / "backfill.pause"


def request_pause(by: str) -> Path:
    path = pause_request_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{by} at {datetime.now().astimezone():%Y-%m-%d %H:%M:%S %Z}")
    return path


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.PROJECT_DIR, capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# what a window's statistics sum per table (Backfill._changes, _changes_in_dates)
_WINDOW_FIGURES = ("snapshots", "added", "deleted", "added_files", "removed_files", "changed_partitions")


def _add_summary(totals: dict[str, int], figures: dict[str, str]) -> None:
    """Add one Iceberg summary's (a snapshot's, or one partition's entry in it) records and
    files to a window's `totals`."""
    for name, key in (("added", "added-records"), ("added_files", "added-data-files"),
                      ("removed_files", "deleted-data-files")):
        totals[name] += int(figures.get(key, 0) or 0)
    totals["deleted"] += iceberg.deleted_records(figures)


class Backfill:
    def __init__(self, dbt: Dbt, spark: Sql, console: Console | None = None,
                 stale_after: timedelta = timedelta(minutes=10)) -> None:
        self.dbt = dbt
        self.spark = spark
        self.console = console or Console()
        self.stale_after = stale_after
        # the lock's heartbeat is written by a thread while windows run (a window may take longer
        # than stale_after); a few beats per stale_after, at most one a minute
        self.heartbeat_every = min(60.0, max(5.0, stale_after.total_seconds() / 4))
        self.owner = f"{socket.gethostname()}:{os.getpid()}"
        # called between windows once the window's checkpoint is durable (tests use it to stop a
        # run at a given point); None lets the checkpoint commit while the next window runs
        self.after_window: Callable[[planning.Window], None] | None = None
        # called just before a window's dbt run (tests use it to make one window's run fail)
        self.before_window: Callable[[planning.Window], None] | None = None
        # the audit's rows as restate_plan read them (_hold_audit), for restate_keys and
        # restate_impact; None when no restatement is being planned
        self._held_audit: str | None = None
        # the rows of the held audit held back beyond their restatement window (late_policy)
        self.pending = late_policy.Pending()
        self.behind: list[tuple[str, str]] = []  # models over models behind their upstream (the audit)
        # restate_reached's answer for the audit and arguments it was asked for
        self._reached_cache: tuple[tuple, list[Reached]] | None = None
        self._by_key: list[str] = []  # the running backfill's models restated by key (_restated_by_key)
        # after a publish or a rollback, rebuild the stale models downstream (tables, plain
        # incremental models: `_downstream_health`) before their data tests run
        self.rebuild_downstream = False
        # the fresh data's lane: a time of day kept clear (var backfill_not_during, --not-during):
        # no window starts that would run into it; and the clock that tells (tests set their own)
        self.not_during: planning.DailySpan | None = None
        self.clock: Callable[[], datetime] = lambda: datetime.now().astimezone()
        self._began = time.time()  # a pause request older than this is not this run's
        # --parallel: how many windows run at once (check_parallel; the cluster target only, each
        # in a worker process of its own: pipeline.backfill.worker)
        self.parallel = 1
        # a window whose dbt run a concurrent commit refused (COMMIT_CONFLICT) runs again, up to
        # this many times, before it is recorded failed
        self.conflict_retries = 2

    # -- planning ----------------------------------------------------------------------------
    def plan(self, start: str, end: str, select: str | None, batch_days: int) -> Plan:
        first = planning.parse_date(start, "--start")
        last = planning.parse_date(end, "--end")
        selectors = planning.parse_selectors(select)
        windows = planning.windows(first, last, batch_days, max_batch_days())
        models = self._models_in_scope(selectors)
        return Plan(first, last, batch_days, " ".join(selectors) or "(all)", models, windows)

    def plan_windows(self, windows: list[tuple[date, date]], select: str | None) -> Plan:
        """A backfill of given windows (a recorded run's, replayed from its plan): each at most
        var backfill_max_batch_days long, the models selected and what is downstream of them."""
        longest = max((end - start).days for start, end in windows)
        if longest > max_batch_days():
            raise planning.PlanError(f"a window of {longest} days is longer than the project var "
                                     f"backfill_max_batch_days ({max_batch_days()})")
        selectors = planning.parse_selectors(select)
        models = self._models_in_scope(selectors)
        return Plan(windows[0][0], windows[-1][1], longest, " ".join(selectors) or "(all)", models,
                    [planning.Window(n, start, end) for n, (start, end) in enumerate(windows)])

    def plan_document(self, plan: Plan, kind: str, reason: str, parameters: dict,
                      impacts: list[DateImpact] | None = None) -> dict:
        """What `--plan-out` writes (pipeline.backfill.plan_file): the plan's scope, the code and
        data it was made on, its estimate (dry_run's figures) and its gates (the data tests run on
        the branches). A restatement's scope also holds its late keys per model (the held audit's
        rows) and its estimate the cost of the missed window per date (`impacts`)."""
        names = [m.name for m in plan.models]
        scope: dict = {"models": names, "tables": [m.relation for m in plan.models],
                       "windows": [{"start": str(w.start), "end": str(w.end)} for w in plan.windows]}
        if kind == "restate":
            scope["late_keys"] = self._late_key_counts(parameters.get("select"))
        figures = {model.name: self._in_window(model, plan.windows) for model in plan.models}
        estimate: dict = {"windows": [
            {"window": f"{w.start} .. {w.end}", "model": m.name,
             **dict(zip(("partitions", "live_rows", "data_files", "bytes"), figures[m.name][w.index]))}
            for w in plan.windows for m in plan.models]}
        sources = sorted({relation for model in plan.models for relation in model.sources})
        estimate["source_records_read_per_window"] = sum(self._metadata_totals(s)[1] for s in sources)
        if impacts:
            estimate["missed_window_cost"] = _impact_entries(impacts)
        return {
            "plan_version": 1, "kind": kind, "reason": planning.check_reason(reason),
            "planned_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "parameters": parameters, "scope": scope,
            "code": {"git_commit": git_commit(), **code_fingerprint(names)},
            "data": {"snapshots": {t: iceberg.current_snapshot_id(self.spark, t)
                                   for t in sorted({*scope["tables"], *sources})}},
            "estimate": estimate,
            "gates": sorted(self.dbt.ls("--resource-type", "test", "--select", *names)),
        }

    def _late_key_counts(self, select: str | None) -> list[dict]:
        """Per model and problem of the held audit (restate_plan's): the late keys, their dates
        and a sha256 of the keys themselves (one key traded for another is a different scope),
        what a restatement's scope is made of."""
        wanted = {s.strip("+") for s in planning.parse_selectors(select)}
        rows = self.spark.sql(
            f"select model_name, problem, count(distinct unique_key) as keys, min(restate_date) as first_date,"
            f" max(restate_date) as last_date,"
            f" sha2(concat_ws(',', array_sort(collect_set(unique_key))), 256) as keys_sha256"
            f" from {self._audit()} group by model_name, problem order by model_name, problem").collect()
        return [{"model": r.model_name, "problem": r.problem, "keys": int(r.keys),
                 "dates": f"{r.first_date} .. {r.last_date}" if r.first_date else "no event date",
                 "keys_sha256": r.keys_sha256}
                for r in rows if not wanted or r.model_name in wanted]

    def _hold_checked_audit(self, select: str | None) -> set[str]:
        """Check the audit view covers the models asked for (each declared, built and auditable),
        then hold its rows (_hold_audit) with the late-data policy applied, and note the rows held
        back beyond their restatement window (`pending`). The models asked for (none: all)."""
        selectors = planning.parse_selectors(select)
        self.dbt.invoke("parse")
        audit = unreflected_changes_relation()
        if not iceberg.table_exists(self.spark, audit):
            raise BackfillRefused(f"{audit} does not exist yet: build the project first (dbt build)")
        wanted = {s.strip("+") for s in selectors}
        undeclared = sorted(m.name for m in incremental_models() if not m.declared and m.name in wanted)
        if undeclared:
            raise planning.PlanError(
                f"--select {undeclared[0]!r} declares no config.meta.backfill_safe (event_date, lookback, "
                "current_state): the audit cannot see its late changes, so restate cannot handle it; backfill it "
                "by dates (pipeline backfill --start --end --select) or declare it")
        # the view may have been replaced (a new declared model, one not built) since this session
        # last read it: without a refresh the session keeps the definition it read first
        iceberg.refreshed(self.spark, audit)
        covered = iceberg.audited_models(self.spark, audit)
        declared = sorted(m.name for m in incremental_models() if m.declared and (not wanted or m.name in wanted))
        uncovered = [name for name in declared if name not in covered]
        if uncovered:
            raise BackfillRefused(
                f"{audit} does not cover {', '.join(uncovered)} yet (it covers:"
                f" {', '.join(sorted(covered - {''})) or 'no model'}): the view is refreshed at the end of a run"
                f" of a declared model; run it first"
                f" (dbt run --select {' '.join(uncovered)})")
        if late_policy.POLICY_COLUMN not in {r.col_name for r in self.spark.sql(f"describe {audit}").collect()}:
            raise BackfillRefused(
                f"{audit} predates the late-data policy (it has no column {late_policy.POLICY_COLUMN}): the view is "
                "replaced at the end of a run of a declared model; run one first (dbt run)")
        held = self._hold_audit(audit)
        rows = self.spark.sql(f"select distinct model_name, problem, differing_columns from {held}"
                              " where problem in ('not built', 'not auditable')").collect()
        unaudited = sorted({(r.model_name, r.problem, r.differing_columns) for r in rows
                            if not wanted or r.model_name in wanted})
        if unaudited:
            self.release_audit()
            raise BackfillRefused(
                f"{'; '.join(f'{name}: declared but {problem} ({why})' for name, problem, why in unaudited)}, so its"
                f" late changes cannot be audited: build it and what it reads first"
                f" (dbt build --select {' '.join('+' + name for name, _, _ in unaudited)})")
        self.pending = late_policy.pending(self.spark, held, wanted)
        self.behind = [(r.model_name, f"{r.keys} keys since {r.since} on {r.dates}") for r in self.spark.sql(
            f"select model_name, count(*) as keys, min(source_updated_at) as since,"
            f" array_join(array_sort(collect_set(cast(restate_date as string))), ', ') as dates"
            f" from {held} where problem = 'behind' group by model_name order by 1").collect()]
        for name, why in self.behind:
            self.console.print(f"[yellow]behind[/] {name}: {why}: it did not run after its upstream (skipped,"
                               f" failed or not selected); a restatement that reaches it fails its gate on its"
                               f" other dates: run it first (dbt run --select {name})")
        return wanted

    def restate_plan(self, select: str | None, batch_days: int) -> Plan | None:
        """A backfill of exactly the order dates of the rows that arrived after their lookback
        window (audit_unreflected_changes) and that the late-data policy lets a restatement
        restate (within their model's restatement window, or signed off), for the facts that miss
        them and what is downstream of those; None when there are none. The rows held back
        beyond their window are left in `pending`."""
        wanted = self._hold_checked_audit(select)
        rows = self.spark.sql(f"select distinct model_name, restate_date, loaded_event_date, signoff_id"
                              f" from {self._audit()}").collect()
        rows = [r for r in rows if not wanted or r.model_name in wanted]
        if not rows:
            self.release_audit()
            return None
        dates = sorted({d for r in rows for d in (r.restate_date, r.loaded_event_date) if d is not None})
        # only models with no event date (restated by key on the first window): one day carries them
        windows = planning.windows_for_dates(dates or [datetime.now(UTC).date()], batch_days, max_batch_days())
        try:
            models = self._models_in_scope(sorted({r.model_name for r in rows}))
        except (planning.PlanError, BackfillRefused):
            self.release_audit()
            raise
        signoffs = tuple(sorted({(r.signoff_id, r.model_name) for r in rows if r.signoff_id is not None}))
        held_dates = tuple(sorted({d for r in self.spark.sql(
            f"select distinct restate_date, loaded_event_date from {self._audit(held=True)}").collect()
            for d in r if d is not None}))
        return Plan(windows[0].start, windows[-1].end, batch_days,
                    "restate " + " ".join(sorted({r.model_name for r in rows})), models, windows, signoffs,
                    held_dates)

    def held_pending(self, select: str | None) -> late_policy.Pending:
        """The rows late beyond their restatement window that no sign-off covers, of the models
        asked for, with the audit held for restate_keys and restate_impact (held=True) until
        release_audit."""
        self._hold_checked_audit(select)
        return self.pending

    def check_approval(self, approve: str) -> late_policy.Pending:
        """The rows held now (held_pending's), when `approve` is their hash or its first 12
        characters or more; else refused, naming the hash of now."""
        pending = self.pending
        if not pending.rows:
            raise BackfillRefused("nothing is held beyond its restatement window: there is nothing to sign off")
        if len(approve) < 12 or not pending.hash.startswith(approve.lower()):
            raise BackfillRefused(
                f"--approve {approve}: the rows held now hash to {pending.hash[:16]} ({pending.keys} keys of "
                f"{', '.join(m.name for m in pending.models)}): they are not the rows approved (they changed since, "
                "or the hash is mistyped); review them again (pipeline signoff) and approve what is shown")
        return pending

    def sign_off(self, signed_by: str, reason: str, approve: str, impacts: list[DateImpact]) -> str:
        """Record a sign-off of the rows held now (held_pending's; `approve`: the hash, or its
        first 12 characters or more, of the rows the signer reviewed, refused when they changed)
        with the impact shown to them; the next restatement restates them. Returns its id."""
        pending = self.check_approval(approve)
        signed_by, reason = planning.check_reason(signed_by, "--by"), planning.check_reason(reason)
        signoff_id = f"so_{datetime.now(UTC):%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"
        impact = json.dumps([{**entry, "via": list(i.via)} for entry, i in zip(_impact_entries(impacts), impacts)],
                            sort_keys=True, default=str)
        Control(self.spark).record_signoff(signoff_id, signed_by, reason, pending.hash, pending.rows, impact)
        return signoff_id

    def _hold_audit(self, audit: str) -> str:
        """The audit view's rows, read once into a table (control.restate_audit_<token>) that
        restate_plan, restate_keys and restate_impact all read: each read of the view compares
        every declared model's table with its current state computed from scratch (aggregates
        summed again), and a restatement read it six times or more (restate_impact's query
        alone 19-23 s a model under the test suite's load). A cached temporary view would not
        do: Spark finds no cached plan equal to a read of Iceberg views, and computes it again
        (measured). One read also makes the keys, the dates and the cost shown the same rows.
        Dropped when a backfill starts (start), the restatement finds nothing or is refused, or
        its caller is done with a dry run (release_audit). Read a few models' audits at a time
        (iceberg.audit_chunks): one read of 200 models' ran the driver out of memory."""
        self.release_audit()
        self._drop_orphaned_audits()
        held = iceberg.checked_table(f"{SCHEMA}.restate_audit_{secrets.token_hex(4)}")
        # literals (DDL takes no parameter markers), of characters a property value may hold as is
        owner = re.sub(r"[^A-Za-z0-9._:-]", "_", self.owner)
        at = datetime.now(UTC).isoformat(timespec="seconds")
        signoffs = late_policy.signoffs_recorded(self.spark)
        for at_chunk, chunk in enumerate(iceberg.audit_chunks(self.spark, audit)):
            rows = late_policy.held_select(chunk, signoffs)
            if at_chunk == 0:
                self.spark.sql(f"create table {held} using iceberg tblproperties ('backfill_safe.held_by' = '{owner}',"
                               f" 'backfill_safe.held_at' = '{at}') as {rows}")
            else:
                self.spark.sql(f"insert into {held} {rows}")
        self._held_audit = held
        return held

    def _drop_orphaned_audits(self, older_than: timedelta = timedelta(days=1)) -> list[str]:
        """Drop the audit rows a restatement held and never dropped (its process was killed):
        those whose holder (host:pid, table property backfill_safe.held_by) is a process of this
        host that no longer runs, or held longer than `older_than` ago (a holder on another host,
        or one held before holders were recorded). Another live restatement's are kept."""
        dropped = []
        for row in self.spark.sql(f"show tables in {SCHEMA} like 'restate_audit_*'").collect():
            if getattr(row, "isTemporary", False):
                continue
            table = iceberg.checked_table(f"{SCHEMA}.{row.tableName}")
            if table == self._held_audit:
                continue
            properties = {r.key: r.value for r in self.spark.sql(f"show tblproperties {table}").collect()}
            owner, at = properties.get("backfill_safe.held_by"), properties.get("backfill_safe.held_at")
            try:
                held_at = datetime.fromisoformat(at) if at else None
            except ValueError:
                held_at = None
            if (owner and _owner_gone(owner)) or held_at is None or datetime.now(UTC) - held_at > older_than:
                self.spark.sql(f"drop table if exists {table} purge")
                dropped.append(table)
        if dropped:
            self.console.print(f"dropped the audit rows of restatements that did not end: {', '.join(dropped)}",
                               markup=False, highlight=False)
        return dropped

    def release_audit(self) -> None:
        """Drop the audit rows restate_plan held (a dry run's caller, once it printed them)."""
        if self._held_audit is not None:
            self.spark.sql(f"drop table if exists {self._held_audit} purge")
            self._held_audit = None

    def _audit(self, held: bool = False) -> str:
        """What restate_keys and restate_impact read, as a subquery: the rows restate_plan held
        that a restatement restates (`held`: those held back beyond their restatement window);
        without a held audit the view's, by its flag alone (a sign-off is not seen)."""
        # a model 'behind' its upstream is no late key to restate (_hold_checked_audit notes it)
        if self._held_audit is not None:
            return (f"(select * from {self._held_audit} where {'' if held else 'not '}held_back"
                    " and problem <> 'behind') as audit")
        view = iceberg.refreshed(self.spark, unreflected_changes_relation())
        return (f"(select * from {view} where {'' if held else 'not '}{late_policy.POLICY_COLUMN}"
                " and problem <> 'behind') as audit")

    @staticmethod
    def unaudited_models() -> list[str]:
        """The incremental models that declare no config.meta.backfill_safe: the audit of late
        changes (and so restate) does not cover them."""
        return sorted(m.name for m in incremental_models() if not m.declared)

    def restate_keys(self, select: str | None, sample: int = 5, held: bool = False) -> Table:
        """Per model, the keys a restatement will rewrite and why, from audit_unreflected_changes:
        how many of each problem ('missing', 'not deleted', 'stale'), the columns that differ, the
        dates, and a sample of keys; then the models over models it reaches (restate_reached).
        Call after restate_plan (which parses and checks the view); `held`: the keys held back
        beyond their restatement window (held_pending), which a sign-off would release."""
        wanted = {s.strip("+") for s in planning.parse_selectors(select)}
        audit = self._audit(held)
        rows = self.spark.sql(
            f"select model_name, problem, coalesce(differing_columns, '') as differing_columns,"
            f" count(*) as keys, min(restate_date) as first_date, max(restate_date) as last_date,"
            f" count(distinct restate_date) as dates,"
            f" slice(array_sort(collect_list(unique_key)), 1, {int(sample)}) as sample"
            f" from {audit} group by model_name, problem, coalesce(differing_columns, '')"
            f" order by model_name, problem, differing_columns").collect()
        table = Table(title=("keys held beyond their restatement window, pending sign-off" if held else
                             "keys to restate") + " (audit_unreflected_changes): each differs from the current state "
                            "and the next daily run will not pick it up; then the keys of the models over them "
                            "that the restatement reaches, recomputed in the same publish")
        for column in ("model", "keys", "why", "columns that differ", "dates", "sample of keys"):
            table.add_column(column, justify="right" if column == "keys" else "left")
        for row in rows:
            if wanted and row.model_name not in wanted:
                continue
            table.add_row(row.model_name, str(row.keys), row.problem, row.differing_columns or "-",
                          _span(row.first_date, row.last_date, row.dates),
                          ", ".join(row.sample) + (" ..." if row.keys > len(row.sample) else ""))
        for reached in self.restate_reached(select, sample, held):
            table.add_row(reached.model.name, str(reached.keys), f"reached through {', '.join(reached.via)}",
                          "(recomputed)", _span(reached.first_date, reached.last_date, reached.dates),
                          ", ".join(reached.sample) + (" ..." if reached.keys > len(reached.sample) else ""))
        return table

    def restate_reached(self, select: str | None, sample: int = 5, held: bool = False) -> list[Reached]:
        """The models over models (scope.changes: {model}) a restatement reaches, upstream first:
        those whose upstream has keys late beyond its window (audit_unreflected_changes) or is
        itself reached. A model's scope keys reached are those its upstream's rows of the late
        (or reached) keys hold in the column that ties them (scope.changes' key), as the
        upstream's table holds them and as its current state has them (a line moved to another
        date reaches both dates; a deleted order reaches its customer): what the restatement
        recomputes there. Read once per held audit. Call after restate_plan (`held`: of the keys
        held back beyond their restatement window)."""
        audit = self._audit(held)
        cache_key = (audit, select, sample)
        if self._reached_cache is not None and self._reached_cache[0] == cache_key:
            return self._reached_cache[1]
        wanted = {s.strip("+") for s in planning.parse_selectors(select)}
        models = {m.name: m for m in incremental_models()}
        touched: dict[str, str] = {}  # a restated or reached model -> a predicate on its rows
        for row in self.spark.sql(f"select distinct model_name from {audit}").collect():
            model = models.get(row.model_name)
            if model is not None and (not wanted or model.name in wanted):
                mine = f"model_name = '{model.name}'"  # a model's name: a dbt identifier
                touched[model.name] = (f"cast({iceberg.checked_column(model.unique_key)} as string) in"
                                       f" (select unique_key from {audit} where {mine})")
        found: list[Reached] = []
        pending = [m for m in models.values() if m.over_models]
        while pending:
            ready = [m for m in pending if not any(u in {p.name for p in pending} for u in m.upstream_models)]
            if not ready:
                break  # a cycle, which dbt refuses before this runs
            for model in ready:
                pending.remove(model)
                via = [(u, column) for u, column in model.upstream_columns if u in touched]
                if not via:
                    continue
                keys = " union ".join(
                    f"select {iceberg.checked_column(column)} as scope_key from {iceberg.checked_table(relation)}"
                    f" where {touched[upstream]}"
                    for upstream, column in via
                    for relation in (models[upstream].relation, models[upstream].current_state) if relation)
                scope_key = iceberg.checked_column(model.scope_key)
                mine = f"{scope_key} in (select scope_key from ({keys}) as reached)"
                touched[model.name] = f"({touched[model.name]}) or ({mine})" if model.name in touched else mine
                event_date = iceberg.checked_column(model.event_date) if model.event_date else "cast(null as date)"
                rows = " union ".join(
                    f"select cast({iceberg.checked_column(model.unique_key)} as string) as k, {event_date} as d"
                    f" from {iceberg.checked_table(relation)} where {mine}"
                    for relation in (model.relation, model.current_state) if relation)
                # the whole (grouping(d) = 1) and per event date, in one read of the table and its
                # current state (_reached_impact's figures per date need only the table then)
                found_rows = self.spark.sql(
                    f"select grouping(d) as overall, d, count(distinct k) as keys, min(d) as first_date,"
                    f" max(d) as last_date, count(distinct d) as dates,"
                    f" slice(array_sort(collect_set(k)), 1, {int(sample)}) as sample"
                    f" from ({rows}) as keys group by grouping sets ((d), ())").collect()
                total = next((r for r in found_rows if r.overall), None)  # no row at all: no key reached
                by_date = tuple(sorted(((r.d, int(r.keys), list(r.sample or [])) for r in found_rows
                                        if not r.overall and r.d is not None), key=lambda entry: str(entry[0])))
                found.append(Reached(model, tuple(u for u, _ in via), mine, int(total.keys) if total else 0,
                                     total.first_date if total else None, total.last_date if total else None,
                                     int(total.dates) if total else 0, list(total.sample or []) if total else [],
                                     by_date))
        self._reached_cache = (cache_key, found)
        return found

    def restate_impact(self, select: str | None, sample: int = 5, held: bool = False) -> list[DateImpact]:
        """The cost of the missed window, per model and date (the postmortem's figure): for every
        event date of a key late beyond its window (audit_unreflected_changes; its current date
        and the date the table holds it on), the date's row count and declared measures as the
        table holds them now, and as they will be once restated: the held totals, less the late
        keys' rows in the table, plus their live rows in the current state. Every other key of the
        date is either right or inside the window, which the next daily run loads. Reads the table
        and the current state of the late keys' dates only; writes nothing. Call after
        restate_plan (which parses and checks the view); `held`: of the keys held back beyond their
        restatement window (held_pending), what restating them once signed off would do."""
        wanted = {s.strip("+") for s in planning.parse_selectors(select)}
        audit = self._audit(held)
        late = {r.model_name for r in self.spark.sql(f"select distinct model_name from {audit}").collect()}
        impacts: list[DateImpact] = []
        models = [m for m in incremental_models() if m.name in late and (not wanted or m.name in wanted)]
        restated = [m.name for m in models]
        # a model whose current state reads another restated model's table (through its views):
        # its current state now gives the upstream's rows as they are, not as the restatement
        # leaves them, so what it becomes is the restatement's to compute, as a reached model's
        reads = models_read(restated) if restated else {}
        for model in models:
            if not model.current_state:
                raise BackfillRefused(f"{model.name}: declares no current_state, so the cost of its late rows "
                                      "cannot be figured")
            if not model.event_date:
                impacts.append(self._undated_impact(model, audit, sample, tuple(sorted(reads.get(model.name, ())))))
                continue
            table, state = iceberg.checked_table(model.relation), iceberg.checked_table(model.current_state)
            columns = (model.unique_key, model.event_date, *model.measures)
            bad = [c for c in columns if not iceberg.COLUMN_NAME.fullmatch(c)]
            if bad:
                raise BackfillRefused(f"{model.name}: {bad[0]!r} is not a column name")
            figures = ["count(*) as rows", *(f"coalesce(sum({m}), 0) as {m}" for m in model.measures)]
            names = ["rows", *model.measures]

            def totals(relation: str, where: str) -> str:
                return (f"select {model.event_date} as d, {', '.join(figures)} from {relation}"
                        f" where {where} group by {model.event_date}")

            mine = f"model_name = '{model.name}'"  # a declared model's name: a dbt identifier
            keys = f"cast({model.unique_key} as string) in (select unique_key from {audit} where {mine})"
            should_be = ", ".join(
                f"coalesce(held.{n}, 0) - coalesce(late_held.{n}, 0) + coalesce(late_current.{n}, 0) as should_{n}"
                for n in names)
            rows = self.spark.sql(f"""
                with late_held as ({totals(table, keys)}),
                late_current as ({totals(state, f"not is_deleted and {keys}")}),
                dates as (select d from late_held union select d from late_current),
                held as ({totals(table, f"{model.event_date} in (select d from dates)")}),
                late_keys as (
                    select d, count(distinct unique_key) as keys,
                        slice(array_sort(collect_set(unique_key)), 1, {int(sample)}) as sample
                    from (
                        select unique_key, event_date as d from {audit} where {mine}
                        union all
                        select unique_key, loaded_event_date as d from {audit} where {mine}
                    ) as by_date
                    where d is not null
                    group by d
                )
                select dates.d, coalesce(late_keys.keys, 0) as keys, late_keys.sample,
                    {", ".join(f"coalesce(held.{n}, 0) as held_{n}" for n in names)}, {should_be}
                from dates
                left join held on held.d = dates.d
                left join late_held on late_held.d = dates.d
                left join late_current on late_current.d = dates.d
                left join late_keys on late_keys.d = dates.d
                order by dates.d""").collect()
            via = tuple(sorted(reads.get(model.name, ())))
            for row in rows:
                impacts.append(DateImpact(
                    model.name, row.d, int(row.keys), list(row.sample or []), tuple(names),
                    tuple(row[f"held_{n}"] for n in names),
                    None if via else tuple(row[f"should_{n}"] for n in names), via))
        for reached in self.restate_reached(select, sample, held):
            impacts += self._reached_impact(reached)
        return impacts

    def _undated_impact(self, model: IncrementalModel, audit: str, sample: int, via: tuple[str, ...]) -> DateImpact:
        """restate_impact of a late model with no event date (restated by key): its figures over
        the whole table as held, and as restated (the held totals, less the late keys' rows, plus
        their live rows in the current state; None when `via` names restated models it reads)."""
        table, state = iceberg.checked_table(model.relation), iceberg.checked_table(model.current_state)
        names = ("rows", *model.measures)
        figures = ", ".join(f"{sql} as f{i}" for i, sql in enumerate(
            ["count(*)", *(f"coalesce(sum({iceberg.checked_column(m)}), 0)" for m in model.measures)]))
        mine = f"model_name = '{model.name}'"  # a declared model's name: a dbt identifier
        keys = (f"cast({iceberg.checked_column(model.unique_key)} as string) in"
                f" (select unique_key from {audit} where {mine})")
        count = len(names)
        [row] = self.spark.sql(f"""
            select late.keys, late.sample, {", ".join(f"held.f{i} as h{i}, late_held.f{i} as l{i}, now.f{i} as c{i}"
                                                      for i in range(count))}
            from (select count(distinct unique_key) as keys,
                    slice(array_sort(collect_set(unique_key)), 1, {int(sample)}) as sample
                  from {audit} where {mine}) as late
            cross join (select {figures} from {table}) as held
            cross join (select {figures} from {table} where {keys}) as late_held
            cross join (select {figures} from {state} where not is_deleted and {keys}) as now""").collect()
        held = tuple(row[f"h{i}"] for i in range(count))
        restated = None if via else tuple(row[f"h{i}"] - row[f"l{i}"] + row[f"c{i}"] for i in range(count))
        return DateImpact(model.name, None, int(row.keys), list(row.sample or []), names, held, restated, via)

    def _reached_impact(self, reached: Reached) -> list[DateImpact]:
        """A reached model's figures (rows, its declared measures) as its table holds them on
        each event date its reached keys are on (before or after the restatement), or over the
        whole table when it has no event date; with the reached keys per date (restate_reached
        read them: only the table is read here). What they will be after: only the restatement
        computes them."""
        model = reached.model
        names = ("rows", *model.measures)
        figures = ", ".join(f"{sql} as f{i}" for i, sql in enumerate(
            ["count(*)", *(f"coalesce(sum({iceberg.checked_column(m)}), 0)" for m in model.measures)]))
        table = iceberg.checked_table(model.relation)
        if not model.event_date:
            [held] = self.spark.sql(f"select {figures} from {table}").collect()
            return [DateImpact(model.name, None, reached.keys, reached.sample, names, tuple(held), None, reached.via)]
        if not reached.by_date:
            return []
        event_date = iceberg.checked_column(model.event_date)
        days = ", ".join(f"date'{planning.parse_date(str(d), 'event date')}'" for d, _, _ in reached.by_date)
        held = {str(row[0]): tuple(0 if v is None else v for v in row[1:]) for row in self.spark.sql(
            f"select {event_date}, {figures} from {table} where {event_date} in ({days})"
            f" group by {event_date}").collect()}
        return [DateImpact(model.name, d, keys, sample, names, held.get(str(d), (0,) * len(names)), None, reached.via)
                for d, keys, sample in reached.by_date]

    def restate(self, plan: Plan, reason: str, impacts: list[DateImpact],
                applied: tuple[str, str, str] | None = None) -> str:
        """Run a restatement (restate_plan) through the backfill machinery, and keep its cost per
        date: before it starts, each late date's figures as held and as announced (`impacts`:
        restate_impact's, which the caller has just shown; figuring them costs a read of the
        audit view and of each late date); once published, as the table holds them, in
        control.backfill_date_figures (shown by `pipeline status RUN_ID`)."""
        run_id = self.start(plan, reason, applied)
        if self.status_of(run_id) != "published":
            return run_id
        rows = []
        for model in {i.model: i for i in impacts}.values():
            mine = [i for i in impacts if i.model == model.model]
            after = self._date_figures(model.model, model.figures, [i.event_date for i in mine])
            for impact in mine:
                held_now = after.get(impact.event_date, (0,) * len(impact.figures))
                announced_figures = impact.restated or (None,) * len(impact.figures)
                rows += [(impact.model, impact.event_date, name, impact.keys, before, announced, now)
                         for name, before, announced, now in zip(impact.figures, impact.held, announced_figures,
                                                                 held_now)]
        Control(self.spark).record_date_figures(run_id, rows)
        return run_id

    def _date_figures(self, model_name: str, figures: tuple[str, ...], days: list[date | None]) -> dict[date | None, tuple]:
        """A model's figures (rows, then measures, as restate_impact names them) on these event
        dates; the whole table's under None (a model with no event date)."""
        [model] = [m for m in incremental_models() if m.name == model_name]
        measures = "".join(f", coalesce(sum({iceberg.checked_column(m)}), 0)" for m in figures[1:])
        if not model.event_date:
            [row] = self.spark.sql(f"select count(*){measures} from {iceberg.checked_table(model.relation)}").collect()
            return {None: tuple(row)}
        event_date = iceberg.checked_column(model.event_date)
        literals = ", ".join(f"date'{d.isoformat()}'" for d in days if d is not None)
        found = self.spark.sql(
            f"select {event_date} as d, count(*){measures} from {iceberg.checked_table(model.relation)}"
            f" where {event_date} in ({literals}) group by {event_date}").collect()
        return {row[0]: tuple(row[1:]) for row in found}

    @staticmethod
    def impact_table(impacts: list[DateImpact]) -> Table:
        """restate_impact as a table: per model and date, each figure held -> after the restate."""
        table = Table(title="the cost of the missed window: each date's figures as the table holds them -> "
                            "as they will be after the restatement")
        for column in ("model", "date", "late keys", "figures (held -> restated, difference)", "sample of keys"):
            table.add_column(column, justify="right" if column == "late keys" else "left")
        for impact in impacts:
            if impact.restated is None:
                figures = "; ".join(f"{name} {held}" for name, held in zip(impact.figures, impact.held)) + (
                    f" -> recomputed from the restated {', '.join(impact.via)} (recorded with the run)")
            else:
                figures = "; ".join(
                    f"{name} {held} -> {after} ({'+' if after - held >= 0 else ''}{after - held})"
                    for name, held, after in zip(impact.figures, impact.held, impact.restated))
            table.add_row(impact.model, "all dates" if impact.event_date is None else str(impact.event_date),
                          str(impact.keys), figures,
                          ", ".join(impact.sample) + (" ..." if impact.keys > len(impact.sample) else ""))
        return table

    def _models_in_scope(self, selectors: list[str]) -> list[IncrementalModel]:
        """The incremental models selected and everything downstream of them."""
        self.dbt.invoke("parse")
        incremental = {m.name: m for m in incremental_models()}
        if selectors:
            downstream = [s if s.endswith("+") else s + "+" for s in selectors]
            names = set(self.dbt.ls("--resource-type", "model", "--select", *downstream))
            unknown = [s.strip("+") for s in selectors if s.strip("+") not in names]
            if unknown:
                raise planning.PlanError(f"--select {unknown[0]!r} matches no model of the project")
            names &= set(incremental)
        else:
            names = set(incremental)
        if not names:
            raise planning.PlanError(f"--select {' '.join(selectors)!r} reaches no incremental model")
        models = [incremental[name] for name in sorted(names)]
        missing = [m.relation for m in models if not iceberg.table_exists(self.spark, m.relation)]
        if missing:
            raise BackfillRefused(f"{missing[0]} does not exist yet: build it first (dbt build), then backfill")
        return models

    # -- dry run -----------------------------------------------------------------------------
    def dry_run(self, plan: Plan) -> Table:
        """What the backfill would touch; writes nothing. The rows are the live rows of each
        window, counted from the tables; partitions, data files and MB are Iceberg's metadata."""
        table = Table(title=f"backfill plan {plan.start} .. {plan.end} (end exclusive), {len(plan.windows)} windows")
        for column in ("window", "model", "partitions", "live rows", "data files", "MB"):
            table.add_column(column, justify="left" if column in ("window", "model") else "right")
        figures = {model.name: self._in_window(model, plan.windows) for model in plan.models}
        for window in plan.windows:
            for model in plan.models:
                partitions, rows, files, size = figures[model.name][window.index]
                table.add_row(f"{window.index}: {window.start} .. {window.end}", model.name,
                              str(partitions), str(rows), str(files), f"{size / 1e6:.1f}")
        sources = sorted({relation for model in plan.models for relation in model.sources})
        # the raw tables are appended to only (no delete files): their records are their rows
        raw_records = sum(self._metadata_totals(relation)[1] for relation in sources)
        table.caption = (f"each window is one `dbt run` of {len(plan.models)} models; the staging views read all "
                         f"{raw_records} records of their sources ({', '.join(sources) or 'none'}: every version "
                         "landed) per window to pick current versions; live rows and partitions above are what the "
                         "MERGEs may rewrite (the whole table for a model without an event date partition); data "
                         "files and MB also hold the rows merge-on-read deleted, until `pipeline maintain` compacts them")
        return table

    def partitions_rewritten(self, plan: Plan) -> int:
        """The partitions a backfill of `plan` rewrites, as the tables hold them now (Iceberg
        metadata, dry_run's figures): per model, its partitions in each window; a table not
        partitioned by its event date counts its partitions once. What a restatement's cost
        ceiling (var restatement_max_partitions, `pipeline restate --max-partitions`) bounds."""
        total = 0
        for model in plan.models:
            partitions = [f[0] for f in self._in_window(model, plan.windows).values()]
            total += sum(partitions) if self._partitioned_by_event_date(model) else max(partitions, default=0)
        return total

    def _partitioned_by_event_date(self, model: IncrementalModel) -> bool:
        """Whether a model's table exists and is partitioned by its event date (else _in_window
        gives each window the whole table's figures)."""
        relation = iceberg.checked_table(model.relation)
        return bool(model.event_date) and iceberg.table_exists(self.spark, relation) and \
            model.event_date in iceberg.partition_fields(self.spark, relation)

    def _in_window(self, model: IncrementalModel, windows: list[planning.Window]) -> dict[int, tuple[int, int, int, int]]:
        """Per window (by index): partitions, live rows, data files and bytes of a model's table
        in it, by its event date (declared, else its first partition column); the whole table's
        when it is not partitioned by it. The rows are counted from the table, one query for all
        windows: the marts MERGE in merge-on-read mode, which leaves the rows a MERGE deletes or
        updates in their data files (position delete files mark them), so the metadata's
        record_count counts rows no reader sees. The rest is the metadata's."""
        relation = iceberg.checked_table(model.relation)
        if not iceberg.table_exists(self.spark, relation):
            return {window.index: (0, 0, 0, 0) for window in windows}
        if not self._partitioned_by_event_date(model):
            partitions, _, files, size = self._metadata_totals(relation)
            rows = int(self.spark.sql(f"select count(*) from {relation}").collect()[0][0])
            return {window.index: (partitions, rows, files, size) for window in windows}
        column = iceberg.checked_column(model.event_date)

        def within(start: date, end: date) -> str:
            return f"{column} >= date'{start.isoformat()}' and {column} < date'{end.isoformat()}'"

        which = " ".join(f"when {within(w.start, w.end)} then {w.index}" for w in windows)
        live = {row[0]: int(row[1]) for row in self.spark.sql(
            f"select case {which} end as window_index, count(*) from {relation}"
            f" where {within(min(w.start for w in windows), max(w.end for w in windows))}"
            " group by 1").collect()}
        figures = {}
        for window in windows:
            partitions, _, files, size = self._metadata_totals(relation, window, column)
            figures[window.index] = (partitions, live.get(window.index, 0), files, size)
        return figures

    def _metadata_totals(self, relation: str, window: planning.Window | None = None,
                         column: str | None = None) -> tuple[int, int, int, int]:
        """Partitions, records, data files and their bytes, from Iceberg's partitions metadata
        table. Records are those of the data files: with merge-on-read deletes, more than the
        rows a reader sees."""
        if not iceberg.table_exists(self.spark, relation):
            return (0, 0, 0, 0)
        where = f"where partition.`{column}` >= :s and partition.`{column}` < :e" if window and column else ""
        args = {"s": window.start, "e": window.end} if window else {}
        row = self.spark.sql(
            "select count(*), coalesce(sum(record_count), 0), coalesce(sum(file_count), 0),"
            f" coalesce(sum(total_data_file_size_in_bytes), 0) from {relation}.partitions {where}", args=args,
        ).collect()[0]
        return tuple(int(v) for v in row)  # type: ignore[return-value]

    # -- start / resume ------------------------------------------------------------------------
    def _refuse_ungated_cluster(self) -> None:
        """Through a Thrift Server each connection is a session of its own, and dbt opens one per
        data test: only the framework's get_test_sql sets the branch on it, so a project without
        the dispatch block would gate a backfill on its published tables. Refused before anything
        is recorded or written. (The embedded session is every connection's: the runner sets the
        branch on it for the gate.)"""
        if isinstance(self.spark, ThriftSql) and not paths.dispatches_to_framework():
            raise BackfillRefused(
                f"{paths.PROJECT_DIR / 'dbt_project.yml'}: through a Spark Thrift Server the gate's data "
                "tests read the backfill's branch only with the framework's dispatch block (namespace dbt, "
                "backfill_safe in search_order: docs/guides/adopt-the-framework.md); without it they would "
                "read the published tables. Add the block, then start the backfill again")

    def start(self, plan: Plan, reason: str, applied: tuple[str, str, str] | None = None) -> str:
        """Start a backfill of `plan`; `applied`: the plan file it was applied from (its hash, path
        and text), recorded with the run."""
        reason = planning.check_reason(reason)
        self.release_audit()  # the restatement's plan is made: its audit rows are not read again
        check_parallel(self.parallel, not isinstance(self.spark, ThriftSql))
        self._refuse_ungated_cluster()
        control = Control(self.spark)
        self._refuse_overlap(control, [m.name for m in plan.models])
        run_id = f"bf_{datetime.now(UTC):%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"
        control.create_run(Run(run_id, "running", plan.start, plan.end, plan.batch_days, plan.selection,
                               [m.name for m in plan.models], reason, git_commit(), self.owner,
                               None, None, None, None))
        # windows, then tables with their base snapshots, then (in _execute) the branches: a run
        # interrupted before its tables are recorded has written nothing anywhere
        control.add_windows(run_id, plan.windows)
        if applied is not None:
            control.record_plan(run_id, *applied)
        if plan.signoffs:  # spent once this run publishes (late_policy.VALID_SIGNOFFS)
            control.record_signoff_uses(run_id, list(plan.signoffs))
        if plan.held_dates:  # kept for a resumed run's gate too
            control.record_gate_exclusions(run_id, list(plan.held_dates),
                                           "late rows held beyond their restatement window, pending sign-off")
        control.add_tables(run_id, run_id, {m.relation: iceberg.current_snapshot_id(self.spark, m.relation)
                                            for m in plan.models})
        self.console.print(f"backfill [bold]{run_id}[/]: {len(plan.windows)} windows, models {', '.join(m.name for m in plan.models)}")
        return self._execute(control, run_id)

    def retry_failed(self, run_id: str) -> str:
        """Run again only the failed windows of a failed run (`resume`, refused for a run in any
        other state), then gate and publish."""
        _, run = self._open(run_id)
        if run.status != "failed":
            raise BackfillRefused(f"run {run_id} is {run.status}, not failed: --retry-failed runs a failed run's failed "
                                  "windows (--resume continues an interrupted or paused one)")
        return self.resume(run_id)

    def resume(self, run_id: str) -> str:
        check_parallel(self.parallel, not isinstance(self.spark, ThriftSql))
        self._refuse_ungated_cluster()
        control, run = self._open(run_id)
        if run.status not in ("running", "failed", "paused"):
            raise BackfillRefused(f"run {run_id} is {run.status}; only a running (interrupted), failed or paused run "
                                  "resumes")
        if run.status == "running" and not self._stale(run):
            raise BackfillRefused(f"run {run_id} is held by {run.owner} (heartbeat {run.heartbeat_at}); "
                                  "wait for it, or resume once its heartbeat is older than "
                                  f"{self.stale_after}")
        self._refuse_overlap(control, run.models, except_run=run_id)
        control.set_status(run_id, "running")
        control.heartbeat(run_id, self.owner)
        self.console.print(f"resuming backfill [bold]{run_id}[/]")
        if run.git_commit != (commit := git_commit()):
            self.console.print(f"[yellow]note:[/] the project is at commit {commit}, the run started at "
                               f"{run.git_commit}: the remaining windows run the current models")
        self._rebase_if_main_moved(control, run_id)
        return self._execute(control, run_id)

    # -- the fresh data's lane -------------------------------------------------------------------
    def _pause_reason(self, window_seconds: float) -> str | None:
        """Why the next window must not start now, or None: the daily run asked for the warehouse
        (`pipeline backfill --pause`: a request file in the state folder, taken here), or the
        window, as long as the longest so far, would run into not_during."""
        request = pause_request_path()
        try:
            asked_at = request.stat().st_mtime
        except FileNotFoundError:
            asked_at = None
        if asked_at is not None:
            asked = request.read_text(errors="replace").strip()[:200]
            request.unlink(missing_ok=True)
            # a request older than this process's start was meant for a run that has ended since
            if asked_at >= self._began:
                return f"the fresh data asked for the warehouse ({asked or 'pipeline backfill --pause'})"
        if self.not_during is not None:
            now = self.clock()
            reopens = self.not_during.meets(now, window_seconds)
            if reopens is not None:
                return (f"the next window (about {window_seconds:.0f} s) would run into not_during "
                        f"{self.not_during} (local time); resume after {reopens:%H:%M}")
        return None

    def _rebase_if_main_moved(self, control: Control, run_id: str) -> None:
        """A daily run (or anything else) committed to a table while the run was paused or down:
        its branch would overwrite that at the publish. Its branch is cut again from main as it is
        now, and every finished window is run again (a window MERGEs what its dates should hold
        from the sources: the same answer, on the new base). Not once a publish has begun."""
        tables = control.tables(run_id)
        if any(t.published_snapshot_id is not None for t in tables):
            return  # a publish under way: _execute finishes it, or refuses
        moved, _ = self._main_moved(tables, run_id)  # a main that carries this run is not moved
        if not moved:
            return
        for table in moved:
            self.spark.sql(f"alter table {table} drop branch if exists `{run_id}`")
            control.rebase_table(run_id, table, iceberg.current_snapshot_id(self.spark, table))
        done = [planning.Window(w.window_index, w.window_start, w.window_end)
                for w in control.windows(run_id) if w.status in ("done", "loaded")]
        if done:
            control.add_windows(run_id, done)
        self.console.print(f"[yellow]note:[/] main of {', '.join(moved)} moved since the "
                           f"branches were cut: cut again from main, and the {len(done)} finished windows run again")

    def abandon(self, run_id: str) -> None:
        """Give up an unpublished run: drop its branches, release its lock. Main is untouched."""
        control, run = self._open(run_id)
        if run.status in ("published", "rolled_back"):
            raise BackfillRefused(f"run {run_id} is {run.status}; use rollback to undo a published run")
        self._drop_branches(control, run_id)
        control.set_status(run_id, "abandoned", "abandoned by " + self.owner, finished=True)

    def _execute(self, control: Control, run_id: str) -> str:
        run = self._run(control, run_id)
        recorded = control.tables(run_id)
        if recorded and all(t.published_snapshot_id is not None for t in recorded):
            # a crash after the publish, before the run was marked published: finish that
            self._drop_branches(control, run_id)
            control.set_status(run_id, "published", finished=True)
            self.console.print(f"[green]published[/] {run_id} (its publish had completed before an interruption)")
            self._downstream_health(control, run_id, run.models, "published")
            return run_id
        if len(recorded) < len(run.models):
            raise BackfillRefused(f"run {run_id} was interrupted while starting, before it wrote anything: "
                                  f"`pipeline backfill --abandon {run_id}`, then start the backfill again")
        for table in recorded:  # cut at start; again after a crash that came before the branches
            if table.published_snapshot_id is None:
                self.spark.sql(f"alter table {table.table_name} create branch if not exists {run_id}")
        # the windows' records go to run_records (this runner) and run_scans (record_scans)
        if not all(iceberg.table_exists(self.spark, t) for t in ("control.run_records", "control.run_scans")):
            self.dbt.invoke("run-operation", "ensure_control_tables")
        windows = control.windows(run_id)
        todo = [planning.Window(w.window_index, w.window_start, w.window_end) for w in windows if w.status != "done"]
        self._by_key = self._restated_by_key(run)
        tables = [t.table_name for t in recorded]
        heartbeat = _Heartbeat(control, run_id, self.owner, self.heartbeat_every)
        with ExitStack() as cleanup:  # undone in reverse order, however the block ends
            try:
                cleanup.enter_context(self.dbt.pinned_manifest())
                # the models and the gate's tests set spark.wap.branch on their own connection
                # (var backfill_branch, macro use_backfill_branch); on the embedded session that
                # setting outlives the invocation: cleared whatever happens
                cleanup.callback(self.spark.conf.unset, "spark.wap.branch")
                heartbeat.start()
                cleanup.callback(heartbeat.stop)
                # a window's checkpoint (its snapshot summaries and one control-table commit) is
                # written by a worker while the next window runs: at most one in flight, and a
                # window whose checkpoint a crash lost is simply run again (the MERGE is idempotent)
                checkpoints = cleanup.enter_context(ThreadPoolExecutor(1, thread_name_prefix=f"checkpoint-{run_id}"))
                pending: Future | None = None
                paused: str | None = None
                failed: list[planning.Window] = []
                with Progress(console=self.console, transient=False) as progress:
                    task = progress.add_task(f"{run_id} windows", total=len(windows),
                                             completed=len(windows) - len(todo))

                    def checkpoint(window: planning.Window, invocation: str, started: datetime, finished: datetime,
                                   stats: dict | None = None, earlier: dict | None = None) -> None:
                        """The window done: `stats` (default: its time's snapshots of every table)
                        and `earlier` (what a parallel run's first models recorded) in its event."""
                        stats = self._changes(tables, run_id, started, finished) if stats is None else stats
                        control.window_done(run_id, window, started, finished, {**(earlier or {}), **stats})
                        control.record_window_runs(run_id, window, invocation, started, finished, stats)
                        progress.advance(task)
                        self.console.print(
                            f"window {window.index + 1}/{len(windows)} {window.start} .. {window.end} done in "
                            f"{(finished - started).total_seconds():.1f} s: "
                            + ", ".join(f"{t} +{c['added']}/-{c['deleted']}" for t, c in stats.items()))

                    # how long a window takes: the longest so far (this process's and the run's
                    # recorded ones), to tell whether the next one would run into not_during
                    took = [(w.finished_at - w.started_at).total_seconds() for w in windows
                            if w.status == "done" and w.started_at and w.finished_at]
                    first, later = self.parallel_split(run.models) if self.parallel > 1 else ([], {})
                    if first:
                        failed, paused, window = self._parallel_windows(
                            control, run_id, windows, todo, took, first, later, checkpoint, cleanup)
                        todo = []
                    elif self.parallel > 1:
                        self.console.print(f"[yellow]note:[/] --parallel {self.parallel}: no model of this run "
                                           "may run its windows at once, so they run one after another ("
                                           + "; ".join(f"{name}: {why}" for name, why in later.items()) + ")")
                    for window in todo:
                        paused = self._pause_reason(max(took, default=0.0))
                        if paused is not None:
                            break
                        if self.before_window is not None:
                            self.before_window(window)
                        started = datetime.now(UTC)
                        detail = self._run_window(run.models, window, run_id, len(windows))
                        if detail is not None:
                            # a model failed on this window's dates: the other windows are other
                            # dates, so they run; this one alone runs again on --resume
                            failed.append(self._window_failed(control, run_id, window, len(windows), started,
                                                              datetime.now(UTC), detail))
                            continue
                        finished = datetime.now(UTC)
                        took.append((finished - started).total_seconds())
                        if pending is not None:
                            pending.result()  # the previous window's checkpoint failed: stop here
                        pending = checkpoints.submit(checkpoint, window, self.dbt.last_invocation_id(), started,
                                                     finished)
                        if self.after_window is not None:
                            pending.result()
                            self.after_window(window)
                    if pending is not None:
                        pending.result()
                if paused is not None:  # every finished window checkpointed; branches kept
                    control.set_status(run_id, "paused", paused)
                    self.console.print(f"[yellow]paused[/] {run_id} before window {window.index + 1}/{len(windows)}: "
                                       f"{paused}; `pipeline backfill --resume {run_id}` continues it (a table "
                                       "whose main moved meanwhile gets its branch cut again, and the finished "
                                       "windows run again)")
                    return run_id
                if failed:  # no gate, no publish: the branches keep the windows that finished
                    message = (f"{len(failed)} of {len(windows)} windows failed ("
                               + ", ".join(f"{w.index + 1}: {w.start} .. {w.end}" for w in failed)
                               + f"); `pipeline backfill --retry-failed {run_id}` runs them again, and only them")
                    control.set_status(run_id, "failed", message)
                    self.console.print(f"[red]failed[/] {run_id}: {message}")
                    return run_id
                self._refuse_if_main_moved(control, run_id)
                if not isinstance(self.spark, ThriftSql):
                    # the embedded session is every dbt connection's: the gate's tests read the
                    # branch whether or not the project dispatches get_test_sql to the framework
                    # (cleared with the rest, above)
                    self.spark.conf.set("spark.wap.branch", run_id)
                # the gate checks the dates the run wrote (its windows): the rest of each table is
                # main's, where changes landed and not yet loaded are the daily run's; and a
                # restatement's gate leaves out the dates of the late rows it held (pending
                # sign-off): not its to fix (macro backfill_gate_dates)
                excluded = [str(d) for d in control.gate_exclusions(run_id)]
                gate_vars = {"backfill_branch": run_id, "backfill_gate_windows": _date_ranges(windows),
                             **({"backfill_gate_excluded_dates": excluded} if excluded else {})}
                tests = [n for n in self.dbt.invoke("test", "--select", *run.models, "--vars",
                                                    json.dumps(gate_vars), check=False)
                         if n.resource_type == "test"]
                control.record_gate(run_id, [
                    (n.name, n.generic_test, n.attached_node.split(".")[2] if n.attached_node else None, n.status,
                     n.failures)
                    for n in tests])
                # a test of severity warn (the volume alerts) is reported, not a reason to withhold
                gate = [n for n in tests if n.status not in ("pass", "warn")]
                # the dates a failing reconciliation names, read on the branch while it is set
                dated = {n.name: self._failing_dates(run_id, n, _date_ranges(windows)) for n in gate}
                for warned in (n for n in tests if n.status == "warn"):
                    self.console.print(f"[yellow]warning[/] {warned.name}: {warned.failures} rows")
            except BackfillRefused:
                raise
            except Exception as error:
                control.set_status(run_id, "failed", str(error)[:2000])
                raise
        if gate:
            message = "; ".join(f"{n.name}: {n.status} ({n.failures}){dated.get(n.name, '')}" for n in gate)
            message += f" (the run restated {', '.join(f'[{s}, {e})' for s, e in _date_ranges(windows))})"
            behind = self._behind(run.models)
            if behind:
                message += ("; behind their upstream before this run, so their other dates differ too: "
                            + "; ".join(f"{name} ({why})" for name, why in behind)
                            + f": run them first (dbt run --select {' '.join(name for name, _ in behind)}),"
                              " then this again")
            control.set_status(run_id, "gate_failed", message[:2000], finished=True)
            self.console.print(f"[red]gate failed, nothing published[/]: {message}\n"
                               f"inspect the branch: select ... from <table> version as of '{run_id}'")
            return run_id
        self._publish(control, run_id)
        self._downstream_health(control, run_id, run.models, "published")
        return run_id

    def _failing_dates(self, run_id: str, test: NodeResult, ranges: list[list[str]]) -> str:
        """' on <date> (in the restated window | outside it), ...': the dates a failing test of
        the framework's reconciliations returns (read from its compiled select on the run's
        branch), each against the run's [start, end) ranges; '' for any other test."""
        column = _DATED_TESTS.get(test.generic_test or "")
        if column is None or not test.compiled_code:
            return ""
        query = (f"select distinct cast({column} as string) as failing_date from ({test.compiled_code}) as failing"
                 f" where {column} is not null order by 1 limit {_DATES_SHOWN + 1}")
        thrift = isinstance(self.spark, ThriftSql)
        try:
            if thrift:  # this thread's own connection reads the branch, as the test's did
                self.spark.conf.set("spark.wap.branch", run_id)
            dates = [r.failing_date for r in self.spark.sql(query).collect()]
        except Exception as error:  # noqa: BLE001 - the gate's report, not its verdict
            first = (str(error).strip().splitlines() or [repr(error)])[0]
            return f" (its dates could not be read: {first[:200].replace(';', ',')})"
        finally:
            if thrift:
                self.spark.conf.unset("spark.wap.branch")
        if not dates:
            return ""
        shown = [f"{d} ({'in the restated window' if any(s <= d < e for s, e in ranges) else 'outside it'})"
                 for d in dates[:_DATES_SHOWN]]
        return " on " + ", ".join(shown) + (", ..." if len(dates) > _DATES_SHOWN else "")

    def _behind(self, models: list[str]) -> list[tuple[str, str]]:
        """Those of `models` the restatement's audit listed as behind their upstream (problem
        'behind': a model over models that did not run after their last changes), with why;
        none for a backfill by dates."""
        return [(name, why) for name, why in self.behind if name in set(models)]

    # -- windows: one at a time, or at once ----------------------------------------------------
    def _restated_by_key(self, run: Run) -> list[str]:
        """The models of `run` with no event date that it restates by key (var restate_by_key, on
        its first window: every key whose row differs from the model's select, macro
        restated_keys): those its selection names itself (a restatement's: the models the audit
        listed; no selection: every one). A model reached only through its upstream models
        recomputes the keys their windows' runs recorded."""
        named = set(run.selection.removeprefix("restate ").replace("+", " ").split())
        undated = {m.name for m in incremental_models() if m.declared and not m.event_date}
        return sorted(name for name in run.models if name in undated and (run.selection == "(all)" or name in named))

    def _run_window(self, models: list[str], window: planning.Window, run_id: str, count: int) -> str | None:
        """One window's `dbt run --vars` on the run's branches, in this process; run again when a
        concurrent commit refused it (_after_conflict). None once it ran, else why it failed."""
        attempt = 0
        while True:
            try:
                # --no-populate-cache: the MERGE looks up its one target table lazily, instead of
                # dbt listing every schema of the project first (~0.35 s a window)
                by_key = [name for name in self._by_key if name in models] if window.index == 0 else []
                self.dbt.invoke("run", "--no-write-json", "--no-populate-cache", "--select", *models,
                                "--vars", json.dumps({**window.dbt_vars, "backfill_branch": run_id,
                                                      **({"restate_by_key": by_key} if by_key else {})}))
                return None
            except DbtError as error:
                detail = "; ".join(error.failures) or str(error)  # the models' errors
            failure = self._after_conflict(detail, window, count, attempt)
            if failure is not None:
                return failure
            attempt += 1

    def _window_failed(self, control: Control, run_id: str, window: planning.Window, count: int, started: datetime,
                       finished: datetime, detail: str) -> planning.Window:
        """Record and print a window's failure (`detail`: why); the window."""
        control.window_failed(run_id, window, started, finished, detail[:2000])
        self.console.print(f"[red]window {window.index + 1}/{count} {window.start} .. {window.end} failed[/]: "
                           f"{escape(detail[:1000])}")
        return window

    def _after_conflict(self, detail: str, window: planning.Window, count: int, attempt: int) -> str | None:
        """A window's dbt run failed with `detail` on its `attempt` (0: the first run). None: run
        it again (a concurrent commit refused it, COMMIT_CONFLICT, and conflict_retries allows
        another run); else what its failure records."""
        conflict = COMMIT_CONFLICT.search(detail)
        if conflict is None:
            return detail
        if attempt >= self.conflict_retries:
            return (f"refused by concurrent commits ({conflict.group(0)}) {attempt + 1} times, retried "
                    f"{self.conflict_retries} times (Backfill.conflict_retries): {detail}")
        self.console.print(f"[yellow]window {window.index + 1}/{count} {window.start} .. {window.end} refused by a "
                           f"concurrent commit[/] ({escape(conflict.group(0))}): running it again "
                           f"({attempt + 1} of {self.conflict_retries})")
        return None

    def parallel_split(self, model_names: list[str]) -> tuple[list[str], dict[str, str]]:
        """split_parallel for the models named, as the project declares them and their tables are."""
        models = [m for m in incremental_models() if m.name in set(model_names)]
        return split_parallel(models, {m.name for m in models if self._partitioned_by_event_date(m)},
                              models_read([m.name for m in models]))

    def _parallel_windows(self, control: Control, run_id: str, windows: list, todo: list[planning.Window],
                          took: list[float], first: list[str], later: dict[str, str],
                          checkpoint: Callable, cleanup: ExitStack) -> tuple[list, str | None, planning.Window | None]:
        """The windows of `todo` at once, `self.parallel` at a time, for the models of `first`
        (parallel_split): each window's run in a worker process (pipeline.backfill.worker); a
        window refused by a concurrent commit runs again (_after_conflict). Its figures are
        those of its own dates' partitions (_changes_in_dates). Then, when there are models of
        `later`, each window's run of those, one at a time, in this process. A pause request or
        not_during stops new windows from starting (the running ones finish and are recorded).
        Returns the windows that failed, why it paused, and the window it paused before."""
        models = {m.name: m for m in incremental_models()}
        dated = {models[name].relation: models[name].event_date for name in first}
        limit = str(max(100, 4 * max_batch_days()))
        for table in dated:  # per-partition figures in each snapshot's summary
            self.spark.sql(f"alter table {iceberg.checked_table(table)} set tblproperties"
                           f" ('write.summary.partition-limit' = '{limit}')")
        states = {w.window_index: w for w in windows}
        loaded = {w.index: json.loads(states[w.index].table_stats or "{}") for w in todo
                  if states[w.index].status == "loaded"}
        waiting = [w for w in todo if w.index not in loaded]
        count = len(windows)
        self.console.print(f"{min(self.parallel, max(1, len(waiting)))} windows at once for {', '.join(first)}"
                           + ("; then, one window at a time, " + "; ".join(f"{name} ({why})"
                                                                         for name, why in later.items())
                              if later else ""))
        failed: list[planning.Window] = []
        paused: str | None = None
        stopped_before: planning.Window | None = None
        if waiting:
            workers = self._start_workers(run_id, min(self.parallel, len(waiting)), cleanup)
            answers: queue.Queue = queue.Queue()
            for n, worker in enumerate(workers):
                threading.Thread(target=_read_answers, args=(n, worker, answers), daemon=True,
                                 name=f"answers-{run_id}-{n}").start()
            idle, running, attempts = list(range(len(workers))), {}, {}
            while waiting or running:
                while idle and waiting and paused is None:
                    paused = self._pause_reason(max(took, default=0.0))
                    if paused is not None:
                        stopped_before = waiting[0]
                        break
                    window = waiting.pop(0)
                    if self.before_window is not None:
                        self.before_window(window)
                    n = idle.pop(0)
                    workers[n].stdin.write(json.dumps({"window": window.index, "models": first, "vars": {
                        **window.dbt_vars, "backfill_branch": run_id}}) + "\n")
                    workers[n].stdin.flush()
                    running[n] = window
                if not running:
                    break
                n, answer = answers.get()
                if answer is None and n not in running:  # a worker ended between windows: not used again
                    idle.remove(n)
                    if not idle and not running:
                        raise RuntimeError(f"every backfill worker ended before its windows were done: see "
                                           f"{workers[n].log}")
                    continue
                window = running.pop(n)
                if answer is None:
                    raise RuntimeError(f"backfill worker {n} ended while it ran window {window.index + 1}/{count} "
                                       f"{window.start} .. {window.end}: see {workers[n].log}")
                idle.append(n)
                started, finished = datetime.fromisoformat(answer["started"]), datetime.fromisoformat(answer["finished"])
                if not answer["ok"]:
                    failure = self._after_conflict(answer["error"] or "", window, count, attempts.get(window.index, 0))
                    if failure is None:
                        attempts[window.index] = attempts.get(window.index, 0) + 1
                        waiting.insert(0, window)
                        continue
                    failed.append(self._window_failed(control, run_id, window, count, started, finished, failure))
                    continue
                took.append((finished - started).total_seconds())
                stats = self._changes_in_dates(dated, run_id, window, started, finished)
                if not later:
                    checkpoint(window, answer["invocation_id"], started, finished, stats)
                    continue
                control.window_loaded(run_id, window, started, finished, stats)
                control.record_window_runs(run_id, window, answer["invocation_id"], started, finished, stats)
                loaded[window.index] = stats
                self.console.print(f"window {window.index + 1}/{count} {window.start} .. {window.end}: "
                                   f"{', '.join(first)} done in {(finished - started).total_seconds():.1f} s")
        if paused is not None or failed or not later:
            return failed, paused, stopped_before
        later_tables = [models[name].relation for name in later]
        for window in sorted((w for w in todo if w.index in loaded), key=lambda w: w.index):
            paused = self._pause_reason(max(took, default=0.0))
            if paused is not None:
                return failed, paused, window
            started = datetime.now(UTC)
            failure = self._run_window(list(later), window, run_id, count)
            if failure is not None:
                failed.append(self._window_failed(control, run_id, window, count, started, datetime.now(UTC), failure))
                continue
            finished = datetime.now(UTC)
            checkpoint(window, self.dbt.last_invocation_id(), started, finished,
                       self._changes(later_tables, run_id, started, finished), loaded[window.index])
        return failed, None, None

    def _start_workers(self, run_id: str, count: int, cleanup: ExitStack) -> list[subprocess.Popen]:
        """`count` worker processes (pipeline.backfill.worker), each with its own dbt target and
        log folders and its output in a log file, under <state>/backfill_workers/<run>/; ended
        (their stdin closed, killed after 60 s) when `cleanup` closes."""
        folder = paths.state_dir() / "backfill_workers" / run_id
        package = str(Path(__file__).resolve().parents[2])  # what holds `pipeline`
        workers = []
        for n in range(count):
            home = folder / f"worker{n}"
            home.mkdir(parents=True, exist_ok=True)
            env = {**os.environ, "DBT_TARGET_PATH": str(home / "target"), "BACKFILL_WORKER_LOG_PATH": str(home / "logs"),
                   "PYTHONPATH": os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH")) if p)}
            with (home / "worker.log").open("w") as log:
                worker = subprocess.Popen([sys.executable, "-m", "pipeline.backfill.worker"], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=log, text=True, env=env,
                                          cwd=str(paths.PROJECT_DIR))
            worker.log = home / "worker.log"
            cleanup.callback(_stop_worker, worker)
            workers.append(worker)
        return workers

    def _changes_in_dates(self, dated: dict[str, str], branch: str, window: planning.Window, started: datetime,
                          finished: datetime) -> dict[str, dict[str, int]]:
        """Per table (-> its event date, which partitions it), the sums of the per-partition
        summaries of the window's dates in the snapshots committed to `branch` while the window
        ran. Windows at once commit to the same branches, so a snapshot's time does not tell
        whose it is; its partitions do (table property write.summary.partition-limit, which
        _parallel_windows sets: each snapshot's summary then holds a `partitions.<path>` entry
        per partition it wrote)."""
        committed = self._committed_on(list(dated), branch, started, finished)
        first, last = window.start.isoformat(), window.end.isoformat()
        changes = {}
        for table, event_date in dated.items():
            totals = dict.fromkeys(_WINDOW_FIGURES, 0)
            partitions: set[str] = set()
            for snapshot in committed[table]:
                mine = False
                for key, value in (snapshot.summary or {}).items():
                    fields = dict(part.split("=", 1) for part in key.removeprefix("partitions.").split("/")
                                  if "=" in part) if key.startswith("partitions.") else {}
                    day = fields.get(event_date)
                    if day is None or not first <= day < last:
                        continue
                    mine = True
                    partitions.add(day)
                    _add_summary(totals, dict(item.split("=", 1) for item in value.split(",") if "=" in item))
                totals["snapshots"] += mine
            totals["changed_partitions"] = len(partitions)
            changes[table] = totals
        return changes

    # -- publish / rollback --------------------------------------------------------------------
    def _refuse_if_main_moved(self, control: Control, run_id: str) -> None:
        """A daily run committed to a table since its branch was cut: its branch would overwrite that.
        A main already at the branch's head was fast-forwarded by this run's own publish, which a
        crash interrupted before it finished the other tables: not moved."""
        moved, carried = self._main_moved(control.tables(run_id), run_id)
        if moved:
            published = ("nothing was published" if not carried else
                         f"{', '.join(carried)} already carry this backfill (a publish interrupted before it "
                         "finished); the others were not published")
            message = (f"main of {', '.join(moved)} moved after the backfill started (a daily run committed); "
                       f"{published}. Start the backfill again for the same range "
                       f"(this run's branches stay for inspection; `pipeline backfill --abandon {run_id}` drops them)")
            control.set_status(run_id, "publish_refused", message, finished=True)
            raise BackfillRefused(message)

    def _main_moved(self, tables: list, run_id: str) -> tuple[list[str], list[str]]:
        """The tables whose main moved since their branch was cut, and those whose main carries
        this run already (at its published snapshot or its branch's head: fast-forwarded by this
        run's own publish, which a crash interrupted before it finished or was recorded)."""
        moved, carried = [], []
        for t in tables:
            current = iceberg.current_snapshot_id(self.spark, t.table_name)
            if current != t.base_snapshot_id:
                if current in (t.published_snapshot_id, iceberg.branch_head(self.spark, t.table_name, run_id)):
                    carried.append(t.table_name)
                else:
                    moved.append(t.table_name)
        return moved, carried

    def _publish(self, control: Control, run_id: str) -> None:
        self._refuse_if_main_moved(control, run_id)
        tables = control.tables(run_id)
        published = []
        try:
            for table in tables:
                # main is at the base snapshot, or already at the branch head if a publish that a
                # crash interrupted got this far: either way the snapshot to restore is the base
                pre = table.base_snapshot_id
                current = iceberg.current_snapshot_id(self.spark, table.table_name)
                if table.published_snapshot_id is not None and current == table.published_snapshot_id:
                    published.append((table.table_name, pre))  # published before the crash
                    continue
                if iceberg.branch_head(self.spark, table.table_name, run_id) != current:
                    self.spark.sql(f"call spark_catalog.system.fast_forward('{table.table_name}', 'main', '{run_id}')")
                published.append((table.table_name, pre))
                control.table_published(run_id, table.table_name, pre, iceberg.current_snapshot_id(self.spark, table.table_name))
        except Exception as error:
            for name, pre in published:
                self.spark.sql(f"call spark_catalog.system.rollback_to_snapshot('{name}', {int(pre)})")
            control.set_status(run_id, "failed", f"publish failed, published tables rolled back: {error}"[:2000], finished=True)
            raise
        self._drop_branches(control, run_id)
        control.set_status(run_id, "published", finished=True)
        self.console.print(f"[green]published[/] {run_id}: {', '.join(t.table_name for t in tables)}")

    def rollback(self, run_id: str) -> None:
        control, run = self._open(run_id)
        if run.status != "published":
            raise BackfillRefused(f"run {run_id} is {run.status}; only a published run can be rolled back")
        tables = control.tables(run_id)
        moved = [t.table_name for t in tables
                 if not iceberg.only_compactions_since(self.spark, t.table_name, t.published_snapshot_id)]
        if moved:
            raise BackfillRefused(f"main of {', '.join(moved)} changed after {run_id} was published; rolling back "
                                  "would also undo those later commits. Restate the range with a new backfill instead")
        for table in tables:
            if table.pre_publish_snapshot_id != table.published_snapshot_id:
                self.spark.sql(f"call spark_catalog.system.rollback_to_snapshot('{table.table_name}', "
                               f"{int(table.pre_publish_snapshot_id)})")
            control.table_rolled_back(run_id, table.table_name)
        control.set_status(run_id, "rolled_back", f"rolled back by {self.owner}", finished=True)
        self._downstream_health(control, run_id, run.models, "rolled_back")

    # -- downstream health ---------------------------------------------------------------------
    def _downstream_health(self, control: Control, run_id: str, models: list[str], event: str) -> None:
        """After a publish or a rollback changed `models`' tables: what reads them is checked and
        recorded (control.backfill_downstream). Views read the new rows; tables and incremental
        models that are not of the framework's kind hold what they read before, so they are
        stale: named with the command that refreshes them, or rebuilt first when
        `rebuild_downstream` (a table run again, a plain incremental model fully refreshed: its
        own incremental logic would not see history rewritten); then the data tests of every
        downstream model run (their failures do not undo the event: its own gate was before);
        and the exposures that read any of them are named as consumers to refresh. A failure
        here (a rebuild, a test, dbt itself) is recorded and printed, never raised: the event
        stands (`downstream_failed` tells)."""
        rows: list[tuple] = []
        try:
            if event == "rolled_back":  # a process of its own: the project as it is now
                self.dbt.invoke("parse")
            found = downstream_of(models)
            stale = {"rebuild": [], "full refresh": []}
            for node in found:
                if node.resource_type == "model" and node.refresh in stale:
                    stale[node.refresh].append(node.name)
            rebuilt: dict[str, tuple[str, str | None]] = {}
            if self.rebuild_downstream:
                for refresh, names in stale.items():
                    if names:
                        extra = ("--full-refresh",) if refresh == "full refresh" else ()
                        for n in self.dbt.invoke("run", *extra, "--select", *names, check=False):
                            if n.resource_type == "model":
                                rebuilt[n.name] = ("rebuilt", None) if n.status == "success" else \
                                    ("rebuild failed", f"{n.status}: {n.message or ''}"[:500])
            for node in found:
                if node.resource_type == "exposure":
                    rows.append(("exposure", node.name, None, None, "to refresh", node.detail, None))
                    continue
                status, message = rebuilt.get(node.name) or (
                    ("stale", None) if node.refresh in stale or node.refresh == "backfill" else ("current", None))
                rows.append(("model", node.name, node.name, node.materialized, status, message or node.detail, None))
            # one dbt invocation, when any downstream model has a data test
            tested = tested_models([n.name for n in found if n.resource_type == "model"])
            if tested:
                for n in self.dbt.invoke("test", "--select", *tested, check=False):
                    if n.resource_type == "test":
                        rows.append(("test", n.name, n.attached_node.split(".")[2] if n.attached_node else None,
                                     None, n.status, n.generic_test, n.failures))
        except Exception as error:  # the event stands; what could not be checked is recorded
            rows.append(("error", "downstream health", None, None, "error", str(error)[:2000], None))
        if rows:
            control.record_downstream(run_id, event, rows)
        self._print_downstream(event, rows)

    def _print_downstream(self, event: str, rows: list[tuple]) -> None:
        if not rows:
            self.console.print(f"downstream: nothing reads the {event.replace('_', ' ')} models")
            return
        consumers = [r for r in rows if r[0] == "exposure"]
        if consumers:
            self.console.print("[yellow]consumers to refresh[/] (exposures): "
                               + "; ".join(f"{r[1]} ({r[5]})" if r[5] else r[1] for r in consumers))
        for kind, name, _model, materialized, status, detail, _failures in rows:
            if kind == "model" and status != "current":
                colour = "green" if status == "rebuilt" else "red" if status == "rebuild failed" else "yellow"
                self.console.print(f"[{colour}]{status}[/] {name} ({materialized}): {detail}")
        tests = [r for r in rows if r[0] == "test"]
        failing = [r for r in tests if r[4] not in ("pass", "warn")]
        if tests:
            self.console.print(f"downstream data tests: {len(tests) - len(failing)} passed, {len(failing)} failed"
                               + "".join(f"\n  [red]{r[4]}[/] {r[1]} ({r[6]})" for r in failing))
        for row in (r for r in rows if r[0] == "error"):
            self.console.print(f"[red]downstream not checked[/]: {row[5]}")

    def downstream_failed(self, run_id: str, event: str = "published") -> bool:
        """A data test downstream failed, a rebuild failed, or the check itself did, after the
        latest `event` of the run."""
        return any((r.resource_type == "test" and r.status not in ("pass", "warn"))
                   or r.status in ("rebuild failed", "error")
                   for r in Control(self.spark).downstream(run_id, event))

    # -- helpers -------------------------------------------------------------------------------
    def _open(self, run_id: str) -> tuple[Control, Run]:
        """The control tables and a run, for a run id given by a user (validated first)."""
        control = Control(self.spark)
        return control, self._run(control, planning.check_run_id(run_id))

    def _run(self, control: Control, run_id: str) -> Run:
        runs = control.runs(run_id)
        if not runs:
            raise BackfillRefused(f"no backfill run {run_id}; `pipeline status` lists them")
        return runs[0]

    def _stale(self, run: Run) -> bool:
        """The lock's owner is gone: its process no longer exists on this host, or its heartbeat
        is older than stale_after (judged by the engine's clock, the one that wrote it)."""
        if _owner_gone(run.owner):
            return True
        return bool(self.spark.sql(
            "select heartbeat_at < current_timestamp() - make_dt_interval(0, 0, 0, :seconds) from control.backfill_runs"
            " where run_id = :run_id", args={"seconds": self.stale_after.total_seconds(), "run_id": run.run_id},
        ).collect()[0][0])

    def _refuse_overlap(self, control: Control, models: list[str], except_run: str | None = None) -> None:
        for run in control.active_runs():
            overlap = sorted(set(run.models) & set(models))
            if run.run_id == except_run or not overlap:
                continue
            if run.status == "paused":
                raise BackfillRefused(
                    f"run {run.run_id} holds {', '.join(overlap)}, paused ({run.message}): "
                    f"`pipeline backfill --resume {run.run_id}` to finish it or `pipeline backfill --abandon "
                    f"{run.run_id}` to release it")
            if self._stale(run):
                raise BackfillRefused(
                    f"run {run.run_id} still holds {', '.join(overlap)} but its owner {run.owner} is gone (last heartbeat "
                    f"{run.heartbeat_at}): `pipeline backfill --resume {run.run_id}` "
                    f"to finish it or `pipeline backfill --abandon {run.run_id}` to release it")
            raise BackfillRefused(f"run {run.run_id} ({run.owner}) is backfilling {', '.join(overlap)}; wait for it")

    def _changes(self, tables: list[str], branch: str, started: datetime, finished: datetime) -> dict[str, dict[str, int]]:
        """Per table, the sums of the summaries of the snapshots a window committed to `branch`
        (_committed_on: the runner is the branch's only writer, and windows run one after
        another)."""
        changes = {}
        for table, snapshots in self._committed_on(tables, branch, started, finished).items():
            totals = dict.fromkeys(_WINDOW_FIGURES, 0)
            for snapshot in snapshots:
                totals["snapshots"] += 1
                totals["changed_partitions"] += int(snapshot.summary.get("changed-partition-count", 0) or 0)
                _add_summary(totals, snapshot.summary)
            changes[table] = totals
        return changes

    def _committed_on(self, tables: list[str], branch: str, started: datetime, finished: datetime) -> dict[str, list]:
        """Per table, the snapshots on `branch`'s parent chain committed between `started` and
        `finished` (snapshot_id, parent_id, committed_us, summary), newest first. Read after the
        window, while the next one may already be committing, so the chain is walked from the
        branch's current head and later snapshots are skipped by time. One metadata query."""
        for table in tables:
            iceberg.refreshed(self.spark, table)
        union = " union all ".join(
            f"select '{t}' as table_name, s.snapshot_id, s.parent_id, unix_micros(s.committed_at) as committed_us, s.summary,"
            f" r.snapshot_id as head from {t}.snapshots as s left join {t}.refs as r on r.name = :branch"
            for t in tables)
        snapshots: dict[str, dict[int, object]] = {t: {} for t in tables}
        heads: dict[str, int | None] = dict.fromkeys(tables)
        for row in self.spark.sql(union, args={"branch": branch}).collect():
            snapshots[row.table_name][row.snapshot_id] = row
            heads[row.table_name] = row.head
        # the engine's clock wrote committed_at; the window's times are this process's (one host)
        since, until = int(started.timestamp() * 1e6), int(finished.timestamp() * 1e6)
        found: dict[str, list] = {}
        for table in tables:
            found[table], cursor = [], heads[table]
            while cursor is not None and cursor in snapshots[table]:
                snapshot = snapshots[table][cursor]
                if snapshot.committed_us < since:
                    break
                if snapshot.committed_us <= until:
                    found[table].append(snapshot)
                cursor = snapshot.parent_id
        return found

    def _drop_branches(self, control: Control, run_id: str) -> None:
        for table in control.tables(run_id):
            self.spark.sql(f"alter table {table.table_name} drop branch if exists {run_id}")

    def recorded(self, run_id: str) -> tuple[Run, list[planning.Window]]:
        """A recorded run and its windows, to replay it (`pipeline status RUN_ID --plan-out`)."""
        control, run = self._open(run_id)
        return run, [planning.Window(w.window_index, w.window_start, w.window_end) for w in control.windows(run_id)]

    def status_of(self, run_id: str) -> str:
        return self._run(Control(self.spark), run_id).status

    # -- version notes -------------------------------------------------------------------------
    def changelog(self, limit: int = 20) -> list[str]:
        """The version notes of the latest `limit` published runs (rolled back ones too), newest
        first: when, why, the plan file it was applied from, the dates and models, the rows each
        table gained and lost, and for a restatement each date's figures before -> after. Read
        from the control tables the run wrote; one line each, for a console or a release note."""
        control = Control(self.spark)
        runs = [r for r in reversed(control.runs()) if r.status in ("published", "rolled_back")][:limit]
        lines: list[str] = []
        for run in runs:
            lines.append(f"{run.run_id} {run.status} {run.finished_at or '-'}: {run.reason}")
            windows = control.windows(run.run_id)
            lines.append(f"  event dates {run.start_date} .. {run.end_date} (end exclusive), {len(windows)} windows, "
                         f"models {', '.join(run.models)}")
            recorded = control.plan(run.run_id)
            lines.append(f"  plan {recorded.plan_file} (plan_hash {recorded.plan_hash[:12]})" if recorded
                         else "  plan: none (started from the command line)")
            totals: dict[str, list[int]] = {}
            for window in windows:
                for table, stats in (json.loads(window.table_stats) if window.table_stats else {}).items():
                    total = totals.setdefault(table, [0, 0])
                    total[0] += int(stats.get("added", 0))
                    total[1] += int(stats.get("deleted", 0))
            lines.append("  rows: " + (", ".join(f"{table} +{added}/-{deleted}"
                                                  for table, (added, deleted) in sorted(totals.items())) or "none"))
            for f in control.date_figures(run.run_id):
                lines.append(f"  {f.model_name} {f.event_date or 'all dates'} {f.figure}: {_plain(f.before_value)} -> "
                             f"{_plain(f.after_value)}")
            lines.extend(_downstream_lines(control.downstream(run.run_id, "published")))
            if run.status == "rolled_back":
                lines.append(f"  rolled back: {run.message}")
        return lines

    # -- the late-data policy ------------------------------------------------------------------
    def late_policy_tables(self) -> list[Table]:
        """`pipeline status`'s view of the late-data policy: per declared model, the keys late
        beyond their lookback that the next `pipeline restate` restates and those held beyond
        their restatement window, pending sign-off; then every sign-off, and the restatement
        that spent it. Reads the audit view (each declared model's current state) once."""
        view = unreflected_changes_relation()
        if not iceberg.table_exists(self.spark, view):
            return []
        late = Table(title="late rows: restated by the next `pipeline restate`, or held beyond their restatement "
                           "window until signed off (`pipeline signoff`)")
        for column in ("model", "to restate", "dates", "held, pending sign-off", "held dates", "window (days)"):
            late.add_column(column, justify="right" if column in ("to restate", "held, pending sign-off") else "left")
        for row in late_policy.late_by_model(self.spark, iceberg.refreshed(self.spark, view)):
            late.add_row(row.model_name, row.not_built or str(row.restatable), ", ".join(row.restatable_dates) or "-",
                         str(row.held), ", ".join(row.held_dates) or "-", str(row.window_days or "-"))
        signed = Table(title="sign-offs of rows held beyond their restatement window")
        for column in ("sign-off", "by", "at", "reason", "keys", "models", "dates", "approved hash", "restated by"):
            signed.add_column(column)
        for row in Control(self.spark).signoffs():
            signed.add_row(row.signoff_id, row.signed_by, str(row.signed_at), row.reason, str(row.keys), row.models,
                           _span(row.first_date, row.last_date, row.dates), row.approved_hash[:16],
                           row.restated_by or "pending: the next `pipeline restate`")
        return [late, signed]

    # -- status --------------------------------------------------------------------------------
    def status(self, run_id: str | None = None) -> list[Table]:
        control = Control(self.spark)
        if run_id is None:
            table = Table(title="backfill runs")
            for column in ("run", "status", "range", "models", "reason", "created", "finished"):
                table.add_column(column)
            for run in control.runs():
                table.add_row(run.run_id, run.status, f"{run.start_date} .. {run.end_date}", ", ".join(run.models),
                              run.reason, str(run.created_at), str(run.finished_at or "-"))
            return [table]
        run = self._run(control, planning.check_run_id(run_id))
        head = Table(title=f"{run.run_id}: {run.status}")
        head.add_column("field")
        head.add_column("value")
        for name in ("start_date", "end_date", "batch_days", "selection", "models", "reason", "git_commit",
                     "owner", "created_at", "heartbeat_at", "finished_at", "message"):
            head.add_row(name, str(getattr(run, name)))
        recorded = control.plan(run.run_id)
        head.add_row("plan", f"{recorded.plan_file} (plan_hash {recorded.plan_hash})" if recorded else
                     "none (started from the command line)")
        windows = Table(title="windows")
        for column in ("#", "range", "status", "started", "finished", "rows added/deleted per table (or the error)"):
            windows.add_column(column)
        for w in control.windows(run.run_id):
            stats = json.loads(w.table_stats) if w.table_stats else {}
            windows.add_row(str(w.window_index), f"{w.window_start} .. {w.window_end}", w.status, str(w.started_at or "-"),
                            str(w.finished_at or "-"),
                            stats["error"][:300] if w.status == "failed" else
                            ", ".join(f"{t.split('.')[-1]} +{s['added']}/-{s['deleted']}" for t, s in stats.items()))
        tables = Table(title="tables")
        for column in ("table", "base snapshot", "before publish", "published", "rolled back"):
            tables.add_column(column)
        for t in control.tables(run.run_id):
            tables.add_row(t.table_name, str(t.base_snapshot_id), str(t.pre_publish_snapshot_id),
                           str(t.published_snapshot_id), str(t.rolled_back_at or "-"))
        shown = [head, windows, tables]
        recorded_downstream = control.downstream(run.run_id)
        if recorded_downstream:
            downstream = Table(title="downstream, after the publish (and the rollback): models, exposures to "
                                     "refresh, data tests")
            for column in ("after", "kind", "name", "model", "status", "refresh / detail", "failures"):
                downstream.add_column(column)
            for r in recorded_downstream:
                downstream.add_row(r.event, r.resource_type, r.name, r.model_name or "-", r.status, r.detail or "-",
                                   "-" if r.failures is None else str(r.failures))
            shown.append(downstream)
        figures = control.date_figures(run.run_id)
        if not figures:
            return shown
        cost = Table(title="the cost of the missed window, per date: before the restatement -> announced by "
                           "its dry run -> held after it")
        for column in ("model", "date", "late keys", "figure", "before", "announced", "after"):
            cost.add_column(column, justify="left" if column in ("model", "date", "figure") else "right")
        for f in figures:
            cost.add_row(f.model_name, "all dates" if f.event_date is None else str(f.event_date),
                         str(f.late_keys), f.figure,
                         *(f"{v.normalize():f}" if v is not None else "-"
                           for v in (f.before_value, f.announced_value, f.after_value)))
        return [*shown, cost]
