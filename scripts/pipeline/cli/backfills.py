"""`pipeline backfill | restate | signoff | apply | status | changelog | rollback`: windowed, isolated, reversible
rewrites of history.

Everything from the command line is checked (dates, selectors, run ids, the reason) before Spark
or dbt starts. Refusals (`PlanError`, `BackfillRefused`) exit 2, a dbt failure exits 1 (`refusing`).
"""

from __future__ import annotations

import os

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
    if pause:
        from pipeline.backfill.lane import request_pause
        from pipeline.spark import holder

        path = request_pause(f"pipeline backfill --pause, process {os.getpid()}")
        out.print(
            f"asked the backfill to pause at its next window boundary ({path}); "
            f"the warehouse: {holder() or 'not held now'}",
            markup=False,
            highlight=False,
        )
        return 0
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


@click.option(
    "--select",
    metavar="MODELS",
    help="Declared models to restrict to, space or comma separated (no graph operators: nothing "
    "downstream is added). Default: every declared model.",
)
@click.option(
    "--batch-days",
    type=int,
    default=7,
    show_default=True,
    help="Largest window in days; consecutive dates share windows.",
)
@_reason
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the keys per model and why, the missed window's cost, the dates and windows; write nothing.",
)
@_plan_out
@click.option(
    "--max-partitions",
    type=click.IntRange(0),
    metavar="N",
    help="The cost ceiling: refuse a restatement that rewrites more than N partitions (of every "
    "model in scope, as the tables hold them) unless --approved-by names who approved it. "
    "Default: var restatement_max_partitions (unset: no ceiling).",
)
@click.option(
    "--approved-by", metavar="NAME", help="Who approved a restatement over the cost ceiling; recorded with its reason."
)
@_rebuild
@_not_during
@_parallel
@refusing(_refusals)
def restate(
    select,
    batch_days,
    reason,
    dry_run,
    plan_out,
    max_partitions,
    approved_by,
    rebuild_downstream,
    not_during,
    parallel,
    out,
) -> int:
    """The deep restatement, meant to run on a schedule: backfill only the event dates of rows
    that arrived after their lookback window and that the late-data policy lets it restate.
    Reads audit_unreflected_changes (keys whose current source state is not in the mart and
    that the next daily run will not pick up) and backfills exactly the dates of those within
    their model's restatement window (var restatement_window_days), or signed off, through the
    backfill machinery: branches, gate, atomic publish, rollback. Older rows are held: listed,
    and restated once signed off (pipeline signoff); exit 3 says some are pending."""
    from pipeline.backfill.plan import PlanError, check_reason, parse_selectors

    parse_selectors(select)
    if not dry_run or plan_out:
        check_reason(reason)
    if approved_by is not None:
        check_reason(approved_by, "--approved-by")
    if max_partitions is None:
        max_partitions = _var_ceiling()
    if approved_by and max_partitions is None:
        raise PlanError(
            "--approved-by approves a restatement over the cost ceiling: no ceiling is set "
            "(--max-partitions, var restatement_max_partitions)"
        )
    runner = _runner(out, rebuild_downstream, _lane(not_during), _checked_parallel(parallel))
    restatement = runner.restate_plan(select, batch_days)
    try:
        _show_pending(runner, out, select)
        if plan_out and restatement is not None:
            impacts = runner.restate_impact(select)
            out.print(runner.restate_keys(select))
            out.print(runner.impact_table(impacts))
            document = runner.plan_document(
                restatement, "restate", reason, {"select": select, "batch_days": batch_days}, impacts
            )
            return _write_plan(out, runner, restatement, plan_out, document)
        if restatement is not None and not (dry_run or plan_out) and max_partitions is not None:
            reason = _within_ceiling(runner, out, restatement, reason, max_partitions, approved_by)
        code = _restate(runner, out, restatement, select, reason, dry_run or bool(plan_out))
        return 3 if code == 0 and runner.pending.rows and not (dry_run or plan_out) else code
    finally:
        runner.release_audit()  # the audit's rows restate_plan held (start drops them first)


@click.option(
    "--select",
    metavar="MODELS",
    help="Declared models to restrict to, space or comma separated. Default: every declared model.",
)
@click.option(
    "--approve",
    metavar="HASH",
    help="Sign off the rows held now, whose hash (12 characters or more, as a review prints it) "
    "is HASH; refused if they changed since the review. Needs --by and --reason.",
)
@click.option("--by", "signed_by", metavar="NAME", help="Who signs off (recorded).")
@click.option("--reason", metavar="TEXT", help="Why these rows may be restated (recorded).")
@refusing(_refusals)
def signoff(select, approve, signed_by, reason, out) -> int:
    """Without --approve, a review: the keys late beyond their model's restatement window that
    `pipeline restate` holds, with their impact per model and date (each date's figures now,
    and once restated), and the hash that names them. With --approve HASH --by NAME --reason
    TEXT, the sign-off: recorded (who, when, why, the keys, the impact approved), and the next
    `pipeline restate` restates those keys; keys held later need a sign-off of their own."""
    from pipeline.backfill.plan import PlanError, check_reason, parse_selectors

    parse_selectors(select)
    if approve:
        if not signed_by or not reason:
            raise PlanError("--approve signs off: give --by NAME and --reason TEXT with it")
        check_reason(signed_by, "--by")
        check_reason(reason)
    elif signed_by or reason:
        raise PlanError("--by and --reason come with --approve HASH (the hash a review without them prints)")
    runner = _runner(out)
    try:
        pending = runner.held_pending(select)
        if not pending.rows:
            out.print("nothing is held beyond its restatement window: nothing to sign off")
            return 0
        if approve:
            runner.check_approval(approve)  # before the impact is figured: rows changed since are refused
        out.print(runner.restate_keys(select, held=True))
        impacts = runner.restate_impact(select, held=True)
        out.print(runner.impact_table(impacts))
        if not approve:
            selection = f" --select '{select}'" if select else ""
            out.print(
                f"{pending.keys} keys held beyond their restatement window, hash {pending.hash[:16]}. To "
                f"have the next `pipeline restate` restate them: pipeline signoff{selection} --approve "
                f"{pending.hash[:16]} --by NAME --reason TEXT",
                markup=False,
                highlight=False,
            )
            return 0
        signoff_id = runner.sign_off(signed_by, reason, approve, impacts)
        out.print(
            f"signed off {signoff_id}: {pending.keys} keys of {', '.join(m.name for m in pending.models)} "
            f"by {signed_by}; the next `pipeline restate` restates them",
            markup=False,
            highlight=False,
        )
        return 0
    finally:
        runner.release_audit()


@click.argument("plan_files", metavar="PLAN...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--replan",
    is_flag=True,
    help="Run nothing: when the plan is stale, write the plan made now over PLAN (for another "
    "review); when it is not, say so.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Only check the files (fields, hash, parameters, every model a model of the project), "
    "without Spark: for CI over a folder of plans. Runs nothing.",
)
@_rebuild
@_not_during
@_parallel
@refusing(_refusals)
def apply(plan_files, replan, check, rebuild_downstream, not_during, parallel, out) -> int:
    """Run the backfill or restatement of PLAN exactly: its hash is checked (a plan edited after
    planning is refused), the plan is made again from its parameters on the code and data of now,
    and a different scope (models, tables, windows, a restatement's late keys), different gates
    (data tests) or different code (the SQL or yml configuration of a model in scope or of what
    it reads, the macros, dbt_project.yml) is refused with the difference.
    Tables committed to since planning are shown and do not stop it. The run records the plan
    (pipeline status RUN_ID)."""
    from pathlib import Path

    from pipeline.backfill import plan_file as plans
    from pipeline.backfill.plan import PlanError

    if check:
        return _check_plans(out, [Path(f) for f in plan_files])
    if len(plan_files) != 1:
        raise PlanError("apply runs one plan at a time (several only with --check)")
    path = Path(plan_files[0])
    planned, text = plans.load_with_text(path)
    runner = _runner(out, rebuild_downstream, _lane(not_during), _checked_parallel(parallel))
    parameters = planned["parameters"]
    impacts = None
    try:  # restate_plan holds the audit's rows: released however this ends
        if planned["kind"] == "backfill":
            if parameters.get("windows") is not None:
                plan = runner.plan_windows(plans.window_list(parameters["windows"]), parameters.get("select"))
            else:
                plan = runner.plan(
                    parameters["start"], parameters["end"], parameters.get("select"), parameters["batch_days"]
                )
        else:
            plan = runner.restate_plan(parameters.get("select"), parameters["batch_days"])
            if plan is None:
                raise _stale(
                    path,
                    [
                        "scope: nothing to restate now (every late change planned is in the "
                        "marts, or was restated since)"
                    ],
                )
            impacts = runner.restate_impact(parameters.get("select"))
            _show_pending(runner, out, parameters.get("select"))
        now = runner.plan_document(plan, planned["kind"], planned["reason"], parameters, impacts)
        stale = plans.differences(planned, now)
        if replan:  # never runs anything: a re-plan is reviewed before it is applied
            if not stale:
                out.print(
                    f"{path}: unchanged (a plan made now has the same scope, gates and code); nothing run",
                    markup=False,
                    highlight=False,
                )
                return 0
            plans.dump(now, path)
            out.print(f"{path}: re-planned, nothing run; review the difference, then apply it:", markup=False)
            for line in stale:
                out.print(f"  {line}", markup=False, highlight=False)
            return 0
        if stale:
            raise _stale(path, stale)
        for line in plans.notes(planned, now):
            out.print(f"note: {line}", markup=False, highlight=False)
        applied = (planned["plan_hash"], str(path), text)
        out.print(
            f"applying {path} (plan_hash {planned['plan_hash'][:12]}): {len(plan.windows)} windows, "
            f"models {', '.join(m.name for m in plan.models)}",
            markup=False,
            highlight=False,
        )
        if impacts is not None:
            return _show_run(runner, out, runner.restate(plan, planned["reason"], impacts, applied))
        return _show_run(runner, out, runner.start(plan, planned["reason"], applied))
    finally:
        runner.release_audit()


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
        for line in drift:  # whole, not wrapped: the file path at its end is to copy
            out.print(f"  {line.text()}", markup=False, highlight=False, soft_wrap=True)
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


def register(group: click.Group) -> None:
    """The commands of this module, each with its --help's exit codes (pipeline.cli.EXIT_CODES)."""
    for function, name, short_help in (
        (backfill, "backfill", "Restate [start, end) in windows on Iceberg branches, published atomically."),
        (restate, "restate", "Backfill only the dates of rows late beyond their window."),
        (signoff, "signoff", "Review late rows held beyond their restatement window; sign them off."),
        (apply, "apply", "Run exactly a reviewed plan file (written by --plan-out)."),
        (status, "status", "List backfill runs and model metrics, or show one run."),
        (changelog, "changelog", "The version notes of published backfills, newest first."),
        (rollback, "rollback", "Restore a published backfill's tables to before it."),
    ):
        command(group, name, short_help=short_help)(function)


def _write_plan(out, runner, plan, path: str, document: dict) -> int:
    """Print the plan's windows and estimate (the dry run's table), write the plan file."""
    from pathlib import Path

    from pipeline.backfill import plan_file as plans

    out.print(runner.dry_run(plan))
    plans.dump(document, Path(path))
    out.print(f"wrote the plan to {path}: review it, then `pipeline apply {path}`", markup=False, highlight=False)
    return 0


def _check_plans(out, files) -> int:
    """`apply --check`: each file loads (fields, hash, parameters) and names models of the project
    only (dbt's manifest, parsed without Spark). A failing file is a refusal naming it."""
    import json

    from pipeline import paths
    from pipeline.backfill import plan_file as plans
    from pipeline.backfill.plan import PlanError
    from pipeline.dbt import parse_project

    documents = [(path, plans.load(path)) for path in files]
    parse_project()
    manifest = json.loads((paths.target_dir() / "manifest.json").read_text())
    models = {n["name"] for n in manifest["nodes"].values() if n["resource_type"] == "model"}
    for path, document in documents:
        unknown = plans.unresolved(document, models)
        if unknown:
            raise PlanError(f"{path}: {', '.join(unknown)} is not a model of the project")
        out.print(
            f"ok {path}: {document['kind']}, {len(document['scope']['windows'])} windows, "
            f"models {', '.join(document['scope']['models'])}",
            markup=False,
            highlight=False,
        )
    return 0


def _stale(path, differences: list[str]):
    from pipeline.backfill.plan import BackfillRefused

    return BackfillRefused(
        f"{path} is stale: a plan made now differs from it, so nothing ran:\n"
        + "\n".join(f"  {line}" for line in differences)
        + f"\nplan again and have it reviewed (`pipeline apply --replan {path}` writes the new plan)"
    )


def _var_ceiling() -> int | None:
    """var restatement_max_partitions of the project (None: no ceiling), checked."""
    from pipeline import paths
    from pipeline.backfill.plan import PlanError

    try:
        value = paths.project_var("restatement_max_partitions")
    except KeyError:
        return None
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise PlanError(
            f"dbt_project.yml: var restatement_max_partitions must be whole partitions >= 0 or null; got {value!r}"
        )
    return value


def _within_ceiling(runner, out, restatement, reason: str, ceiling: int, approved_by: str | None) -> str:
    """The reason to record: refused (BackfillRefused) over the ceiling unless approved, then
    with the approval in it."""
    from pipeline.backfill.plan import BackfillRefused

    partitions = runner.partitions_rewritten(restatement)
    if partitions <= ceiling:
        return reason
    if not approved_by:
        raise BackfillRefused(
            f"the restatement would rewrite {partitions} partitions, over the cost ceiling of {ceiling} "
            "(--max-partitions, var restatement_max_partitions); nothing ran. Review it (--dry-run) and run it "
            "again with --approved-by NAME, or restrict it (--select)"
        )
    out.print(
        f"over the cost ceiling: {partitions} partitions > {ceiling}, approved by {approved_by}",
        markup=False,
        highlight=False,
    )
    return f"{reason} (over the cost ceiling: {partitions} partitions > {ceiling}, approved by {approved_by})"


def _show_pending(runner, out, select: str | None) -> None:
    """The rows a restatement holds back beyond their restatement window, pending sign-off."""
    if not runner.pending.rows:
        return
    from rich.table import Table

    table = Table(
        title="held beyond their restatement window, pending sign-off (not restated: review and sign "
        "off with `pipeline signoff`)"
    )
    for column in ("model", "keys", "dates", "window (days)", "sample of keys"):
        table.add_column(column)
    for model in runner.pending.models:
        table.add_row(
            model.name,
            str(model.keys),
            "-" if model.first_date is None else f"{model.first_date} .. {model.last_date} ({model.dates})",
            str(model.window_days or "-"),
            ", ".join(model.sample) + (" ..." if model.keys > len(model.sample) else ""),
        )
    out.print(table)
    out.print(
        f"{runner.pending.keys} keys held, hash {runner.pending.hash[:16]}: "
        f"pipeline signoff{f' --select {select!r}' if select else ''} reviews them",
        markup=False,
        highlight=False,
    )


def _restate(runner, out, restatement, select: str | None, reason: str | None, dry_run: bool) -> int:
    """`pipeline restate` once planned: the keys, the cost per date, then the restatement."""
    unaudited = runner.unaudited_models()
    if unaudited and not select:
        out.print(
            "not audited for late changes (no config.meta.backfill_safe), so not restated: " + ", ".join(unaudited)
        )
    if restatement is None:
        out.print("nothing to restate: every late change within its restatement window (or signed off) is in the marts")
        return 0
    out.print(runner.restate_keys(select))
    impacts = runner.restate_impact(select)
    out.print(runner.impact_table(impacts))
    out.print(
        f"restating {len(restatement.windows)} windows: "
        + ", ".join(f"{w.start} .. {w.end}" for w in restatement.windows)
    )
    if dry_run:
        out.print(runner.dry_run(restatement))
        return 0
    return _show_run(runner, out, runner.restate(restatement, reason, impacts))
