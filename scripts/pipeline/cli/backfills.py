"""`pipeline backfill | status | changelog | rollback`: windowed, isolated, reversible rewrites of
history; and what the commands of restatements (pipeline.cli.restatements) and plans
(pipeline.cli.plans) share: their options, the runner, the exit code of a run.

Everything from the command line is checked (dates, selectors, run ids, the reason) before Spark
or dbt starts. Refusals (`PlanError`, `BackfillRefused`) exit 2, a dbt failure exits 1 (`refusing`).
"""

from __future__ import annotations

import os
import sys

import click

from pipeline.cli import command, refusing

_plan_out = click.option(
    "--plan-out",
    metavar="FILE",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the plan (scope, code, data, estimate, gates; YAML) to FILE for review, and "
    "run nothing: `pipeline apply FILE` runs exactly it. Needs --reason.",
)
_reason = click.option(
    "--reason", metavar="TEXT", help="Why history is rewritten; required unless --dry-run, recorded with the run."
)
_rebuild = click.option(
    "--rebuild-downstream",
    is_flag=True,
    help="Once published (rolled back), rebuild the tables and plain incremental models "
    "downstream, left stale by it (a plain incremental model is fully refreshed), before "
    "their data tests run. Default: name them, with the command that refreshes them.",
)


def _refusals():
    from pipeline.backfill.plan import BackfillRefused, PlanError

    return PlanError, BackfillRefused


_not_during = click.option(
    "--not-during",
    metavar="HH:MM-HH:MM",
    help="The fresh data's lane, in local time: start no window that would run into it "
    "(pause at the window boundary before, exit 5; --resume after). "
    "Default: var backfill_not_during (unset: none).",
)


_parallel = click.option(
    "--parallel",
    type=int,
    default=1,
    show_default=True,
    metavar="N",
    help="Windows at once, at most var backfill_max_parallel (4); above 1 on the cluster "
    "target only (a worker process each). Models that cannot (not partitioned by "
    "their event date, or scoped by another key) run theirs one at a time after.",
)


def _checked_parallel(parallel: int) -> int:
    """--parallel, checked before Spark or dbt starts."""
    from pipeline.backfill.parallel import check_parallel
    from pipeline.engine import uses_session

    check_parallel(parallel, uses_session())
    return parallel


def _pause(wait: int | None, out) -> int:
    """--pause [--wait SECONDS]: ask, then wait for the warehouse (0 free, 1 still held)."""
    from pipeline.backfill.lane import request_pause, wait_for_warehouse
    from pipeline.engine import uses_session
    from pipeline.spark import holder

    path = request_pause(f"pipeline backfill --pause, process {os.getpid()}")
    out.print(
        f"asked the backfill to pause at its next window boundary ({path}); "
        f"the warehouse: {holder() or 'not held now'}",
        markup=False,
        highlight=False,
    )
    if wait is None:
        return 0
    if not uses_session():
        out.print(
            "--wait: the cluster target has no warehouse lock to wait for; the backfill pauses at its next "
            "window boundary and publishes nothing meanwhile",
            markup=False,
            highlight=False,
        )
        return 0
    still = wait_for_warehouse(wait)
    if still is not None:
        print(f"error: the embedded warehouse is still held by {still} after {wait} s", file=sys.stderr)
        return 1
    out.print("the warehouse is free", markup=False, highlight=False)
    return 0


def _lane(not_during: str | None):
    """--not-during, else var backfill_not_during, checked (None: no lane)."""
    from pipeline import paths
    from pipeline.backfill.plan import parse_daily_span

    if not_during is not None:
        return parse_daily_span(not_during, "--not-during")
    try:
        value = paths.project_var("backfill_not_during")
    except KeyError:
        return None
    return None if value is None else parse_daily_span(value, "dbt_project.yml: var backfill_not_during")


def _runner(out, rebuild_downstream: bool = False, not_during=None, parallel: int = 1):
    from pipeline.backfill.runner import Backfill
    from pipeline.dbt import Dbt
    from pipeline.engine import get_engine

    runner = Backfill(Dbt(quiet=True), get_engine(), out)
    runner.rebuild_downstream = rebuild_downstream
    runner.not_during = not_during
    runner.parallel = parallel
    return runner


def _show_run(runner, out, run_id: str) -> int:
    """The run's tables; 0 published, 4 published and something downstream failed, 5 paused for
    the fresh data's lane, else 1."""
    for table in runner.status(run_id):
        out.print(table)
    status = runner.status_of(run_id)
    if status == "paused":
        return 5
    if status != "published":
        return 1
    return 4 if runner.downstream_failed(run_id) else 0


@click.option("--start", metavar="YYYY-MM-DD", help="First event date (inclusive).")
@click.option("--end", metavar="YYYY-MM-DD", help="Last event date (exclusive).")
@click.option(
    "--select",
    metavar="MODELS",
    help="Model names, space or comma separated, optionally with dbt's + operators; everything "
    "downstream of them is included. Default: every incremental model of the framework's kind.",
)
@click.option(
    "--batch-days",
    type=int,
    default=7,
    show_default=True,
    help="Days per window, at most the project var backfill_max_batch_days.",
)
@_reason
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print windows, models and what each window may rewrite (Iceberg metadata only); write nothing.",
)
@click.option(
    "--resume", metavar="RUN_ID", help="Continue an interrupted, failed or paused run: only its windows not done run."
)
@click.option(
    "--retry-failed", metavar="RUN_ID", help="Run again only the failed windows of a failed run, then gate and publish."
)
@click.option("--abandon", metavar="RUN_ID", help="Drop an unpublished run's branches and release its lock.")
@click.option(
    "--pause",
    is_flag=True,
    help="Ask the running backfill of this warehouse to pause at its next window boundary (for "
    "the daily run); it exits 5, and --resume continues it.",
)
@click.option(
    "--wait",
    type=click.IntRange(0, 86400),
    metavar="SECONDS",
    help="With --pause: then wait, at most SECONDS, until no process holds the embedded warehouse "
    "(the backfill paused or ended); exit 1 if one still does.",
)
@_plan_out
@_rebuild
@_not_during
@_parallel
@refusing(_refusals)
def backfill(
    start,
    end,
    select,
    batch_days,
    reason,
    dry_run,
    resume,
    retry_failed,
    abandon,
    pause,
    wait,
    plan_out,
    rebuild_downstream,
    not_during,
    parallel,
    out,
) -> int:
    """Restate the models' rows whose event date is in [--start, --end): one `dbt run --vars` per
    window of at most --batch-days days, all writes on an Iceberg branch per table, data tests on
    the branches, then every table published at once (or none). Checkpointed (--resume),
    reversible (rollback). Give exactly one of --start/--end, --resume, --abandon, --pause."""
    from pipeline.backfill.plan import PlanError, check_reason, check_run_id, parse_date, parse_selectors

    if sum([bool(resume), bool(retry_failed), bool(abandon), bool(start or end), pause]) != 1:
        raise PlanError(
            "give either --start/--end (a new backfill), --resume RUN_ID, --retry-failed RUN_ID, "
            "--abandon RUN_ID or --pause"
        )
    if wait is not None and not pause:
        raise PlanError("--wait comes with --pause: it waits for the backfill asked to pause")
    if pause:
        return _pause(wait, out)
    lane = _lane(not_during)
    parallel = _checked_parallel(parallel)
    if resume or retry_failed or abandon:
        given = "--resume" if resume else "--retry-failed" if retry_failed else "--abandon"
        if dry_run:
            # a dry run plans a new backfill; resuming or abandoning one has nothing to plan,
            # and ignoring the flag would do for real what was asked as a rehearsal
            raise PlanError(f"--dry-run plans a new backfill (--start/--end); it cannot be combined with {given}")
        if plan_out:
            raise PlanError(f"--plan-out plans a new backfill (--start/--end); it cannot be combined with {given}")
        check_run_id(resume or retry_failed or abandon)
    else:
        parse_date(start, "--start")
        parse_date(end, "--end")
        parse_selectors(select)
        if not dry_run or plan_out:
            check_reason(reason)
    runner = _runner(out, rebuild_downstream, lane, parallel)
    if abandon:
        runner.abandon(abandon)
        out.print(f"abandoned {abandon}")
        return 0
    if resume:
        return _show_run(runner, out, runner.resume(resume))
    if retry_failed:
        return _show_run(runner, out, runner.retry_failed(retry_failed))
    plan = runner.plan(start, end, select, batch_days)
    if plan_out:
        parameters = {"start": start, "end": end, "select": select, "batch_days": batch_days}
        return _write_plan(out, runner, plan, plan_out, runner.plan_document(plan, "backfill", reason, parameters))
    if dry_run:
        out.print(runner.dry_run(plan))
        return 0
    return _show_run(runner, out, runner.start(plan, reason))


@click.argument("run_id", required=False)
@click.option(
    "--plan-out",
    metavar="FILE",
    type=click.Path(dir_okay=False, writable=True),
    help="With RUN_ID: write a plan that replays the run (its windows and models, planned now on "
    "the current code) to FILE, for review and `pipeline apply`.",
)
@refusing(_refusals)
def status(run_id, plan_out, out) -> int:
    """List backfill runs and each model's minimal metrics (a model over models: the upstream
    runs it holds, and how many it is behind), then each volume_within_band test
    that cannot fire at its table's current volume and why, and every model whose watermark
    is ahead of its loadable data (the data test no_watermark_drift's rows); or, given RUN_ID
    (bf_...), one run's parameters, windows, tables and the plan it was applied from; with
    --plan-out, a plan replaying that run."""
    from pipeline.backfill.plan import PlanError, check_run_id

    if plan_out and not run_id:
        raise PlanError("--plan-out replays one run: give its RUN_ID")
    if run_id:
        check_run_id(run_id)
    runner = _runner(out)
    if plan_out:
        run, windows = runner.recorded(run_id)
        if not windows:
            raise PlanError(f"run {run_id} recorded no windows (interrupted while starting): nothing to replay")
        parameters = {
            "windows": [{"start": str(w.start), "end": str(w.end)} for w in windows],
            "select": " ".join(run.models),
            "batch_days": run.batch_days,
        }
        plan = runner.plan_windows([(w.start, w.end) for w in windows], parameters["select"])
        document = runner.plan_document(plan, "backfill", f"replay of {run_id}: {run.reason}"[:500], parameters)
        return _write_plan(out, runner, plan, plan_out, document)
    for table in runner.status(run_id):
        out.print(table)
    if not run_id:
        for table in runner.late_policy_tables():
            out.print(table)
        from pipeline.drift import watermark_drift
        from pipeline.metrics import consumption_table, metrics_table, model_metrics
        from pipeline.volume import silent_tests

        metrics = model_metrics(runner.spark)
        out.print(metrics_table(metrics))
        consumed = consumption_table(metrics)  # how far each aggregate holds its upstreams' runs
        if consumed is not None:
            out.print(consumed)
        for line in silent_tests(runner.spark, runner.dbt):  # a guard that keeps the test quiet whatever the volume
            out.print(line, markup=False, highlight=False)
        drift = watermark_drift(runner.dbt, runner.spark)
        ahead = sorted({d.model_name for d in drift})
        out.print(
            f"watermarks ahead of their loadable data: {', '.join(ahead) or 'none'}", markup=False, highlight=False
        )
        for found in drift:  # whole, not wrapped: the file path at its end is to copy
            out.print(f"  {found.text()}", markup=False, highlight=False, soft_wrap=True)
    return 0


@click.option(
    "--limit",
    type=click.IntRange(1, 1000),
    default=20,
    show_default=True,
    help="How many of the latest published (or rolled back) runs.",
)
@refusing(_refusals)
def changelog(limit, out) -> int:
    """One version note per published backfill or restatement, newest first: when and why, the
    plan file it was applied from, its event dates and models, the rows each table gained and
    lost, a restatement's figures per date before -> after, and whether it was rolled back."""
    lines = _runner(out).changelog(limit)
    for line in lines or ["no published backfill yet"]:
        out.print(line, markup=False, highlight=False, soft_wrap=True)
    return 0


@click.argument("run_id")
@_rebuild
@refusing(_refusals)
def rollback(run_id, rebuild_downstream, out) -> int:
    """Restore every table of the published backfill RUN_ID (bf_...) to its snapshot before publishing;
    then, as after a publish, check what reads those tables (the data tests downstream, the stale
    models, the exposures to tell)."""
    from pipeline.backfill.plan import check_run_id

    check_run_id(run_id)
    runner = _runner(out, rebuild_downstream)
    runner.rollback(run_id)
    out.print(f"rolled back {run_id}")
    return 4 if runner.downstream_failed(run_id, "rolled_back") else 0


def _write_plan(out, runner, plan, path: str, document: dict) -> int:
    """Print the plan's windows and estimate (the dry run's table), write the plan file."""
    from pathlib import Path

    from pipeline.backfill import plan_file as plans

    out.print(runner.dry_run(plan))
    plans.dump(document, Path(path))
    out.print(f"wrote the plan to {path}: review it, then `pipeline apply {path}`", markup=False, highlight=False)
    return 0


def register(group: click.Group) -> None:
    """The commands of this module, each with its --help's exit codes (pipeline.cli.EXIT_CODES)."""
    for function, name, short_help in (
        (backfill, "backfill", "Restate [start, end) in windows on Iceberg branches, published atomically."),
        (status, "status", "List backfill runs and model metrics, or show one run."),
        (changelog, "changelog", "The version notes of published backfills, newest first."),
        (rollback, "rollback", "Restore a published backfill's tables to before it."),
    ):
        command(group, name, short_help=short_help)(function)
