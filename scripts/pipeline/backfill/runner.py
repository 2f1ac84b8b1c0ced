"""Running a backfill: write-audit-publish over Iceberg branches, one dbt run per window.

A run cuts a branch (named after the run id) on every table in scope, and each window's
`dbt run --vars {backfill_start, backfill_end, backfill_branch}` sets `spark.wap.branch` on its
connection (macro use_backfill_branch), so it merges into the branches only; main, and every
reader of it, sees nothing. Then the data tests run against the branches (the gate, with the
same var). Only if they pass is every table fast-forwarded to its branch, after
checking that no table's main moved meanwhile: all published, or none. Each window is
checkpointed in the control tables, so `resume` continues after the last finished one; the
snapshot each table had before publishing is recorded, so `rollback` restores it. After a
publish or a rollback, what stands downstream of the run's models is checked and recorded.

`Backfill` orchestrates those steps; each has a module of its own in this package:

- scope: the models a backfill covers, its plan, and what it would touch (dry run, plan file);
- restatement and impact: the late rows a restatement restates, what they reach and cost;
- lock and lane: who holds a run's models, and when a window gives way to the daily run;
- execution and parallel: the windows run, one at a time or at once, checkpointed;
- gate, publish, downstream: the data tests on the branches, the fast-forward (and the
  rollback), and what reads the models afterwards;
- status: what the console shows of runs, from the control tables.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, date, datetime, timedelta

from rich.console import Console
from rich.table import Table

from pipeline import iceberg, paths
from pipeline.backfill import downstream, gate, impact, lane, late_policy, lock, publish, scope, status
from pipeline.backfill import plan as planning
from pipeline.backfill.control import RESUMABLE, Control, Run
from pipeline.backfill.execution import Hooks, Windows
from pipeline.backfill.parallel import check_parallel, split_for
from pipeline.backfill.plan import BackfillRefused, Plan
from pipeline.backfill.restatement import Restatement
from pipeline.dbt import Dbt
from pipeline.engine import Sql, ThriftSql
from pipeline.manifest import incremental_models


class Backfill:
    def __init__(
        self, dbt: Dbt, spark: Sql, console: Console | None = None, stale_after: timedelta = timedelta(minutes=10)
    ) -> None:
        self.dbt = dbt
        self.spark = spark
        self.console = console or Console()
        self.stale_after = stale_after
        # the lock's heartbeat is written by a thread while windows run (a window may take longer
        # than stale_after); a few beats per stale_after, at most one a minute
        self.heartbeat_every = min(60.0, max(5.0, stale_after.total_seconds() / 4))
        self.owner = lock.this_owner()
        # called between windows once the window's checkpoint is durable (tests use it to stop a
        # run at a given point); None lets the checkpoint commit while the next window runs
        self.after_window: Callable[[planning.Window], None] | None = None
        # called just before a window's dbt run (tests use it to make one window's run fail)
        self.before_window: Callable[[planning.Window], None] | None = None
        # a restatement's late rows, held while it is planned, shown and signed off
        self.restatement = Restatement(dbt, spark, self.console, self.owner)
        # after a publish or a rollback, rebuild the stale models downstream (tables, plain
        # incremental models: pipeline.backfill.downstream) before their data tests run
        self.rebuild_downstream = False
        # the fresh data's lane: a time of day kept clear (var backfill_not_during, --not-during):
        # no window starts that would run into it; and the clock that tells (tests set their own)
        self.not_during: planning.DailySpan | None = None
        self.clock: Callable[[], datetime] = lambda: datetime.now().astimezone()
        self._began = time.time()  # a pause request older than this is not this run's
        # --parallel: how many windows run at once (check_parallel; the cluster target only, each
        # in a worker process of its own: pipeline.backfill.worker)
        self.parallel = 1
        # a window whose dbt run a concurrent commit refused (execution.COMMIT_CONFLICT) runs
        # again, up to this many times, before it is recorded failed
        self.conflict_retries = 2

    # -- planning (pipeline.backfill.scope) ----------------------------------------------------
    def plan(self, start: str, end: str, select: str | None, batch_days: int) -> Plan:
        return scope.plan(self.dbt, self.spark, start, end, select, batch_days)

    def plan_windows(self, windows: list[tuple[date, date]], select: str | None) -> Plan:
        return scope.plan_windows(self.dbt, self.spark, windows, select)

    def plan_document(
        self, plan: Plan, kind: str, reason: str, parameters: dict, impacts: list[impact.DateImpact] | None = None
    ) -> dict:
        late_keys = self.restatement.late_key_counts(parameters.get("select")) if kind == "restate" else None
        return scope.plan_document(
            self.dbt,
            self.spark,
            plan,
            kind,
            reason,
            parameters,
            late_keys,
            impact.impact_entries(impacts) if impacts else None,
        )

    def dry_run(self, plan: Plan) -> Table:
        return scope.dry_run(self.spark, plan)

    def partitions_rewritten(self, plan: Plan) -> int:
        return scope.partitions_rewritten(self.spark, plan)

    def parallel_split(self, model_names: list[str]) -> tuple[list[str], dict[str, str]]:
        return split_for(self.spark, model_names)

    # -- restatements (pipeline.backfill.restatement, impact) ----------------------------------
    @property
    def pending(self) -> late_policy.Pending:
        """The rows of the held audit held back beyond their restatement window."""
        return self.restatement.pending

    def restate_plan(self, select: str | None, batch_days: int) -> Plan | None:
        return self.restatement.plan(select, batch_days)

    def held_pending(self, select: str | None) -> late_policy.Pending:
        """The rows late beyond their restatement window that no sign-off covers, of the models
        asked for, with the audit held for restate_keys and restate_impact (held=True) until
        release_audit."""
        self.restatement.hold_checked_audit(select)
        return self.restatement.pending

    def check_approval(self, approve: str) -> late_policy.Pending:
        return self.restatement.check_approval(approve)

    def sign_off(self, signed_by: str, reason: str, approve: str, impacts: list[impact.DateImpact]) -> str:
        return self.restatement.sign_off(signed_by, reason, approve, impacts)

    def release_audit(self) -> None:
        self.restatement.release_audit()

    @staticmethod
    def unaudited_models() -> list[str]:
        """The incremental models that declare no config.meta.backfill_safe: the audit of late
        changes (and so restate) does not cover them."""
        return sorted(m.name for m in incremental_models() if not m.declared)

    def restate_keys(self, select: str | None, sample: int = 5, held: bool = False) -> Table:
        return self.restatement.keys(select, sample, held)

    def restate_reached(self, select: str | None, sample: int = 5, held: bool = False) -> list[impact.Reached]:
        return self.restatement.reached(select, sample, held)

    def restate_impact(self, select: str | None, sample: int = 5, held: bool = False) -> list[impact.DateImpact]:
        return self.restatement.impacts(select, sample, held)

    impact_table = staticmethod(impact.impact_table)

    def restate(
        self, plan: Plan, reason: str, impacts: list[impact.DateImpact], applied: tuple[str, str, str] | None = None
    ) -> str:
        """Run a restatement (restate_plan) through the backfill machinery, and keep its cost per
        date: before it starts, each late date's figures as held and as announced (`impacts`:
        restate_impact's, which the caller has just shown); once published, as the table holds
        them (Restatement.record_figures, shown by `pipeline status RUN_ID`)."""
        return self._figures_once_published(self.start(plan, reason, applied), impacts)

    def resume_restatement(self, run_id: str, impacts: list[impact.DateImpact]) -> str:
        """Resume a restatement's run (a retried `pipeline apply`), keeping its cost per date as
        restate does."""
        return self._figures_once_published(self.resume(run_id), impacts)

    def _figures_once_published(self, run_id: str, impacts: list[impact.DateImpact]) -> str:
        if self.status_of(run_id) == "published":
            self.restatement.record_figures(run_id, impacts)
        return run_id

    # -- start / resume / abandon ----------------------------------------------------------------
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
                "read the published tables. Add the block, then start the backfill again"
            )

    def start(self, plan: Plan, reason: str, applied: tuple[str, str, str] | None = None) -> str:
        """Start a backfill of `plan`; `applied`: the plan file it was applied from (its hash, path
        and text), recorded with the run."""
        reason = planning.check_reason(reason)
        self.release_audit()  # the restatement's plan is made: its audit rows are not read again
        check_parallel(self.parallel, not isinstance(self.spark, ThriftSql))
        self._refuse_ungated_cluster()
        control = Control(self.spark)
        lock.refuse_overlap(self.spark, control, [m.name for m in plan.models], self.stale_after)
        run_id = f"bf_{datetime.now(UTC):%Y%m%d_%H%M%S}_{secrets.token_hex(3)}"
        control.create_run(
            Run(
                run_id,
                "running",
                plan.start,
                plan.end,
                plan.batch_days,
                plan.selection,
                [m.name for m in plan.models],
                reason,
                scope.git_commit(),
                self.owner,
                None,
                None,
                None,
                None,
            )
        )
        # windows, then tables with their base snapshots, then (in _execute) the branches: a run
        # interrupted before its tables are recorded has written nothing anywhere
        control.add_windows(run_id, plan.windows)
        if applied is not None:
            control.record_plan(run_id, *applied)
        if plan.signoffs:  # spent once this run publishes (late_policy.VALID_SIGNOFFS)
            control.record_signoff_uses(run_id, list(plan.signoffs))
        if plan.held_dates:  # kept for a resumed run's gate too
            control.record_gate_exclusions(
                run_id, list(plan.held_dates), "late rows held beyond their restatement window, pending sign-off"
            )
        control.add_tables(
            run_id, run_id, {m.relation: iceberg.current_snapshot_id(self.spark, m.relation) for m in plan.models}
        )
        self.console.print(
            f"backfill [bold]{run_id}[/]: {len(plan.windows)} windows, models {', '.join(m.name for m in plan.models)}"
        )
        return self._execute(control, run_id)

    def retry_failed(self, run_id: str) -> str:
        """Run again only the failed windows of a failed run (`resume`, refused for a run in any
        other state), then gate and publish."""
        _, run = self._open(run_id)
        if run.status != "failed":
            raise BackfillRefused(
                f"run {run_id} is {run.status}, not failed: --retry-failed runs a failed run's failed "
                "windows (--resume continues an interrupted or paused one)"
            )
        return self.resume(run_id)

    def resume(self, run_id: str) -> str:
        check_parallel(self.parallel, not isinstance(self.spark, ThriftSql))
        self._refuse_ungated_cluster()
        control, run = self._open(run_id)
        if run.status not in RESUMABLE:
            raise BackfillRefused(
                f"run {run_id} is {run.status}; only a running (interrupted), failed or paused run resumes"
            )
        if run.status == "running" and not lock.stale(self.spark, run, self.stale_after):
            raise BackfillRefused(
                f"run {run_id} is held by {run.owner} (heartbeat {run.heartbeat_at}); "
                "wait for it, or resume once its heartbeat is older than "
                f"{self.stale_after}"
            )
        lock.refuse_overlap(self.spark, control, run.models, self.stale_after, except_run=run_id)
        control.set_status(run_id, "running")
        control.heartbeat(run_id, self.owner)
        self.console.print(f"resuming backfill [bold]{run_id}[/]")
        if run.git_commit != (commit := scope.git_commit()):
            self.console.print(
                f"[yellow]note:[/] the project is at commit {commit}, the run started at "
                f"{run.git_commit}: the remaining windows run the current models"
            )
        publish.rebase_if_main_moved(self.spark, self.console, control, run_id)
        return self._execute(control, run_id)

    def abandon(self, run_id: str) -> None:
        """Give up an unpublished run: drop its branches, release its lock. Main is untouched."""
        control, run = self._open(run_id)
        if run.status in ("published", "rolled_back"):
            raise BackfillRefused(f"run {run_id} is {run.status}; use rollback to undo a published run")
        publish.drop_branches(self.spark, control, run_id)
        control.set_status(run_id, "abandoned", "abandoned by " + self.owner, finished=True)

    # -- the run: windows, gate, publish -------------------------------------------------------
    def _execute(self, control: Control, run_id: str) -> str:
        run = status.recorded_run(control, run_id)
        recorded = control.tables(run_id)
        if recorded and all(t.published_snapshot_id is not None for t in recorded):
            # a crash after the publish, before the run was marked published: finish that
            publish.drop_branches(self.spark, control, run_id)
            control.set_status(run_id, "published", finished=True)
            self.console.print(f"[green]published[/] {run_id} (its publish had completed before an interruption)")
            self._downstream_health(control, run_id, run.models, "published")
            return run_id
        if len(recorded) < len(run.models):
            raise BackfillRefused(
                f"run {run_id} was interrupted while starting, before it wrote anything: "
                f"`pipeline backfill --abandon {run_id}`, then start the backfill again"
            )
        publish.cut_branches(self.spark, recorded, run_id)
        # the windows' records go to run_records (this runner) and run_scans (record_scans)
        if not all(iceberg.table_exists(self.spark, t) for t in ("control.run_records", "control.run_scans")):
            self.dbt.invoke("run-operation", "ensure_control_tables")
        windows = control.windows(run_id)
        hooks = Hooks(
            self.before_window,
            self.after_window,
            lambda seconds: lane.pause_reason(self._began, self.not_during, self.clock, seconds),
        )
        heartbeat = lock.Heartbeat(control, run_id, self.owner, self.heartbeat_every)
        with ExitStack() as cleanup:  # undone in reverse order, however the block ends
            try:
                cleanup.enter_context(self.dbt.pinned_manifest())
                # the models and the gate's tests set spark.wap.branch on their own connection
                # (var backfill_branch, macro use_backfill_branch); on the embedded session that
                # setting outlives the invocation: cleared whatever happens
                cleanup.callback(self.spark.conf.unset, "spark.wap.branch")
                heartbeat.start()
                cleanup.callback(heartbeat.stop)
                # the windows' models read from the manifest just parsed: a resume in a fresh
                # process (a scheduler's retry on another worker) has no manifest before it
                executed = Windows(
                    self.dbt,
                    self.spark,
                    self.console,
                    control,
                    run,
                    windows,
                    [t.table_name for t in recorded],
                    hooks,
                    self.parallel,
                    self.conflict_retries,
                )
                outcome = executed.run(cleanup)
                if outcome.paused is not None or outcome.failed:
                    return self._stopped(control, run_id, outcome, len(windows))
                publish.refuse_if_main_moved(self.spark, control, run_id)
                verdict = gate.run(self.dbt, self.spark, self.console, control, run_id, run.models, windows)
            except BackfillRefused:
                raise
            except Exception as error:
                control.set_status(run_id, "failed", str(error)[:2000])
                raise
        if verdict.failed:
            behind = [(name, why) for name, why in self.restatement.behind if name in set(run.models)]
            message = gate.message(verdict, windows, behind)
            control.set_status(run_id, "gate_failed", message[:2000], finished=True)
            self.console.print(
                f"[red]gate failed, nothing published[/]: {message}\n"
                f"inspect the branch: select ... from <table> version as of '{run_id}'"
            )
            return run_id
        self._publish(control, run_id)
        self._downstream_health(control, run_id, run.models, "published")
        return run_id

    def _stopped(self, control: Control, run_id: str, outcome, count: int) -> str:
        """A run whose windows paused (every finished window checkpointed, branches kept) or
        failed (no gate, no publish: the branches keep the windows that finished)."""
        if outcome.paused is not None:
            window = outcome.paused_before
            control.set_status(run_id, "paused", outcome.paused)
            self.console.print(
                f"[yellow]paused[/] {run_id} before window {window.index + 1}/{count}: "
                f"{outcome.paused}; `pipeline backfill --resume {run_id}` continues it (a table "
                "whose main moved meanwhile gets its branch cut again, and the finished "
                "windows run again)"
            )
            return run_id
        message = (
            f"{len(outcome.failed)} of {count} windows failed ("
            + ", ".join(f"{w.index + 1}: {w.start} .. {w.end}" for w in outcome.failed)
            + f"); `pipeline backfill --retry-failed {run_id}` runs them again, and only them"
        )
        control.set_status(run_id, "failed", message)
        self.console.print(f"[red]failed[/] {run_id}: {message}")
        return run_id

    def _publish(self, control: Control, run_id: str) -> None:
        publish.publish(self.spark, self.console, control, run_id)

    def rollback(self, run_id: str) -> None:
        control, run = self._open(run_id)
        if run.status != "published":
            raise BackfillRefused(f"run {run_id} is {run.status}; only a published run can be rolled back")
        publish.roll_back(self.spark, control, run_id, self.owner)
        self._downstream_health(control, run_id, run.models, "rolled_back")

    def _downstream_health(self, control: Control, run_id: str, models: list[str], event: str) -> None:
        downstream.check(self.dbt, control, self.console, run_id, models, event, self.rebuild_downstream)

    def downstream_failed(self, run_id: str, event: str = "published") -> bool:
        return downstream.failed(self.spark, run_id, event)

    # -- what was recorded (pipeline.backfill.status) ------------------------------------------
    def _open(self, run_id: str) -> tuple[Control, Run]:
        """The control tables and a run, for a run id given by a user (validated first)."""
        control = Control(self.spark)
        return control, status.recorded_run(control, planning.check_run_id(run_id))

    def recorded(self, run_id: str) -> tuple[Run, list[planning.Window]]:
        """A recorded run and its windows, to replay it (`pipeline status RUN_ID --plan-out`)."""
        control, run = self._open(run_id)
        return run, [planning.Window(w.window_index, w.window_start, w.window_end) for w in control.windows(run_id)]

    def run_of_plan(self, plan_hash: str) -> Run | None:
        """The latest run applied from the plan of `plan_hash` (`pipeline apply`), or None."""
        runs = Control(self.spark).runs_of_plan(plan_hash)
        return runs[-1] if runs else None

    def status_of(self, run_id: str) -> str:
        return status.recorded_run(Control(self.spark), run_id).status

    def changelog(self, limit: int = 20) -> list[str]:
        return status.changelog(self.spark, limit)

    def late_policy_tables(self) -> list[Table]:
        return status.late_policy_tables(self.spark)

    def status(self, run_id: str | None = None) -> list[Table]:
        return status.tables(self.spark, run_id)
