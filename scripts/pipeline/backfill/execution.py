"""A run's windows executed: each window one `dbt run --vars {backfill_start, backfill_end,
backfill_branch}` on the run's branches, one after another in this process (or, with
`--parallel N` on a cluster, several at once: pipeline.backfill.parallel); a window a
concurrent commit refused runs again; a failed window is recorded and the others run; a window
done is checkpointed (its changes and its dbt invocation in the control tables) while the next
one runs, so `resume` continues after the last finished one; the fresh data's lane is asked
before each window starts (pipeline.backfill.lane)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime

from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, TaskID

from pipeline.backfill import changes
from pipeline.backfill import plan as planning
from pipeline.backfill.control import Control, Run
from pipeline.dbt import Dbt, DbtError
from pipeline.engine import Sql
from pipeline.manifest import incremental_models

# what a window's dbt run says when a concurrent commit refused its own (Iceberg's optimistic
# concurrency: the commit validated against the table's newer snapshot and found a conflicting
# change, or ran out of Iceberg's own retries): the window runs again, a bounded number of times
COMMIT_CONFLICT = re.compile(
    r"ValidationException|CommitFailedException|[Ff]ound conflicting|"
    r"[Cc]onflicting (files|delete files|data files)|Cannot commit"
)


@dataclass
class Outcome:
    """How a run's windows ended: those that failed, and why the run paused (and the window it
    paused before), if it did."""

    failed: list[planning.Window] = field(default_factory=list)
    paused: str | None = None
    paused_before: planning.Window | None = None


@dataclass
class Hooks:
    """What the runner lets a caller (its tests) do around windows, and how it asks the lane."""

    # called just before a window's dbt run (tests use it to make one window's run fail)
    before_window: Callable[[planning.Window], None] | None
    # called between windows once the window's checkpoint is durable (tests use it to stop a
    # run at a given point); None lets the checkpoint commit while the next window runs
    after_window: Callable[[planning.Window], None] | None
    # why the next window (lasting about the given seconds) must not start now, or None
    pause_reason: Callable[[float], str | None]


def restated_by_key(run: Run) -> list[str]:
    """The models of `run` with no event date that it restates by key (var restate_by_key, on
    its first window: every key whose row differs from the model's select, macro
    restated_keys): those its selection names itself (a restatement's: the models the audit
    listed; no selection: every one). A model reached only through its upstream models
    recomputes the keys their windows' runs recorded."""
    named = set(run.selection.removeprefix("restate ").replace("+", " ").split())
    undated = {m.name for m in incremental_models() if m.declared and not m.event_date}
    return sorted(name for name in run.models if name in undated and (run.selection == "(all)" or name in named))


class Windows:
    """The windows of one run, executed (`run`): the ones not done yet, in turn or at once."""

    def __init__(
        self,
        dbt: Dbt,
        spark: Sql,
        console: Console,
        control: Control,
        run: Run,
        windows: list,
        tables: list[str],
        hooks: Hooks,
        parallel: int,
        conflict_retries: int,
    ) -> None:
        self.dbt, self.spark, self.console, self.control = dbt, spark, console, control
        self.run_id = run.run_id
        self.models = run.models
        self.windows = windows  # as recorded (control.windows)
        self.count = len(windows)
        self.tables = tables
        self.hooks = hooks
        self.parallel = parallel
        self.conflict_retries = conflict_retries
        self.by_key = restated_by_key(run)
        # how long a window takes: the longest so far (this process's and the run's
        # recorded ones), to tell whether the next one would run into not_during
        self.took = [
            (w.finished_at - w.started_at).total_seconds()
            for w in windows
            if w.status == "done" and w.started_at and w.finished_at
        ]
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def pause_reason(self) -> str | None:
        return self.hooks.pause_reason(max(self.took, default=0.0))

    def run(self, cleanup: ExitStack) -> Outcome:
        """Every window not done yet; `cleanup` ends what they started (checkpoint thread,
        workers) however the caller's block ends."""
        from pipeline.backfill import parallel

        todo = [
            planning.Window(w.window_index, w.window_start, w.window_end) for w in self.windows if w.status != "done"
        ]
        # a window's checkpoint (its snapshot summaries and one control-table commit) is
        # written by a worker while the next window runs: at most one in flight, and a
        # window whose checkpoint a crash lost is simply run again (the MERGE is idempotent)
        checkpoints = cleanup.enter_context(ThreadPoolExecutor(1, thread_name_prefix=f"checkpoint-{self.run_id}"))
        with Progress(console=self.console, transient=False) as progress:
            self._progress = progress
            self._task = progress.add_task(f"{self.run_id} windows", total=self.count, completed=self.count - len(todo))
            first, later = parallel.split_for(self.spark, self.models) if self.parallel > 1 else ([], {})
            if first:
                return parallel.run_at_once(self, todo, first, later, cleanup)
            if self.parallel > 1:
                self.console.print(
                    f"[yellow]note:[/] --parallel {self.parallel}: no model of this run "
                    "may run its windows at once, so they run one after another ("
                    + "; ".join(f"{name}: {why}" for name, why in later.items())
                    + ")"
                )
            return self._in_turn(todo, checkpoints)

    def _in_turn(self, todo: list[planning.Window], checkpoints: ThreadPoolExecutor) -> Outcome:
        """The windows of `todo` one after another, each checkpointed while the next runs."""
        outcome = Outcome()
        pending: Future | None = None
        for window in todo:
            outcome.paused = self.pause_reason()
            if outcome.paused is not None:
                outcome.paused_before = window
                break
            if self.hooks.before_window is not None:
                self.hooks.before_window(window)
            started = datetime.now(UTC)
            detail = self.run_window(self.models, window)
            if detail is not None:
                # a model failed on this window's dates: the other windows are other
                # dates, so they run; this one alone runs again on --resume
                outcome.failed.append(self.window_failed(window, started, datetime.now(UTC), detail))
                continue
            finished = datetime.now(UTC)
            self.took.append((finished - started).total_seconds())
            if pending is not None:
                pending.result()  # the previous window's checkpoint failed: stop here
            pending = checkpoints.submit(self.checkpoint, window, self.dbt.last_invocation_id(), started, finished)
            if self.hooks.after_window is not None:
                pending.result()
                self.hooks.after_window(window)
        if pending is not None:
            pending.result()
        return outcome

    def checkpoint(
        self,
        window: planning.Window,
        invocation: str,
        started: datetime,
        finished: datetime,
        stats: dict | None = None,
        earlier: dict | None = None,
    ) -> None:
        """The window done: `stats` (default: its time's snapshots of every table) and `earlier`
        (what a parallel run's first models recorded) in its event."""
        if stats is None:
            stats = changes.changes(self.spark, self.tables, self.run_id, started, finished)
        self.control.window_done(self.run_id, window, started, finished, {**(earlier or {}), **stats})
        self.control.record_window_runs(self.run_id, window, invocation, started, finished, stats)
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task)
        self.console.print(
            f"window {window.index + 1}/{self.count} {window.start} .. {window.end} done in "
            f"{(finished - started).total_seconds():.1f} s: "
            + ", ".join(f"{t} +{c['added']}/-{c['deleted']}" for t, c in stats.items())
        )

    def run_window(self, models: list[str], window: planning.Window) -> str | None:
        """One window's `dbt run --vars` on the run's branches, in this process; run again when a
        concurrent commit refused it (after_conflict). None once it ran, else why it failed."""
        attempt = 0
        while True:
            try:
                # --no-populate-cache: the MERGE looks up its one target table lazily, instead of
                # dbt listing every schema of the project first (~0.35 s a window)
                by_key = [name for name in self.by_key if name in models] if window.index == 0 else []
                self.dbt.invoke(
                    "run",
                    "--no-write-json",
                    "--no-populate-cache",
                    "--select",
                    *models,
                    "--vars",
                    json.dumps(
                        {
                            **window.dbt_vars,
                            "backfill_branch": self.run_id,
                            **({"restate_by_key": by_key} if by_key else {}),
                        }
                    ),
                )
                return None
            except DbtError as error:
                detail = "; ".join(error.failures) or str(error)  # the models' errors
            failure = self.after_conflict(detail, window, attempt)
            if failure is not None:
                return failure
            attempt += 1

    def window_failed(
        self, window: planning.Window, started: datetime, finished: datetime, detail: str
    ) -> planning.Window:
        """Record and print a window's failure (`detail`: why); the window."""
        self.control.window_failed(self.run_id, window, started, finished, detail[:2000])
        self.console.print(
            f"[red]window {window.index + 1}/{self.count} {window.start} .. {window.end} failed[/]: "
            f"{escape(detail[:1000])}"
        )
        return window

    def after_conflict(self, detail: str, window: planning.Window, attempt: int) -> str | None:
        """A window's dbt run failed with `detail` on its `attempt` (0: the first run). None: run
        it again (a concurrent commit refused it, COMMIT_CONFLICT, and conflict_retries allows
        another run); else what its failure records."""
        conflict = COMMIT_CONFLICT.search(detail)
        if conflict is None:
            return detail
        if attempt >= self.conflict_retries:
            return (
                f"refused by concurrent commits ({conflict.group(0)}) {attempt + 1} times, retried "
                f"{self.conflict_retries} times (Backfill.conflict_retries): {detail}"
            )
        self.console.print(
            f"[yellow]window {window.index + 1}/{self.count} {window.start} .. {window.end} refused "
            f"by a concurrent commit[/] ({escape(conflict.group(0))}): running it again "
            f"({attempt + 1} of {self.conflict_retries})"
        )
        return None
