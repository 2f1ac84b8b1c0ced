"""`pipeline restate | signoff`: the scheduled restatement of rows late beyond their lookback
window, within their model's restatement window or signed off; and the review and sign-off of
those held beyond it. Refusals exit 2, a dbt failure exits 1 (pipeline.cli.refusing)."""

from __future__ import annotations

import click

from pipeline.cli import command, refusing
from pipeline.cli.backfills import (
    _checked_parallel,
    _lane,
    _not_during,
    _parallel,
    _plan_out,
    _reason,
    _rebuild,
    _refusals,
    _runner,
    _show_run,
    _write_plan,
)


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


def register(group: click.Group) -> None:
    """The commands of this module, each with its --help's exit codes (pipeline.cli.EXIT_CODES)."""
    for function, name, short_help in (
        (restate, "restate", "Backfill only the dates of rows late beyond their window."),
        (signoff, "signoff", "Review late rows held beyond their restatement window; sign them off."),
    ):
        command(group, name, short_help=short_help)(function)
