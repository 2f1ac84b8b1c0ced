"""`pipeline backfill | restate | status | rollback`: windowed, isolated, reversible rewrites of history.

Everything from the command line is checked (dates, selectors, run ids, the reason) before Spark
or dbt starts. Refusals (`PlanError`, `BackfillRefused`) exit 2, a dbt failure exits 1 (`refusing`).
"""

from __future__ import annotations

import click

from pipeline.cli import command, refusing

_reason = click.option("--reason", metavar="TEXT",
                       help="Why history is rewritten; required unless --dry-run, recorded with the run.")


def _refusals():
    from pipeline.backfill.plan import PlanError
    from pipeline.backfill.runner import BackfillRefused

    return PlanError, BackfillRefused


def _runner(out):
    from pipeline.backfill.runner import Backfill
    from pipeline.dbt import Dbt
    from pipeline.engine import get_engine

    return Backfill(Dbt(quiet=True), get_engine(), out)


def _show_run(runner, out, run_id: str) -> int:
    for table in runner.status(run_id):
        out.print(table)
    return 0 if runner.status_of(run_id) == "published" else 1


def register(group: click.Group) -> None:
    @command(group, "backfill", short_help="Restate [start, end) in windows on Iceberg branches, published atomically.")
    @click.option("--start", metavar="YYYY-MM-DD", help="First event date (inclusive).")
    @click.option("--end", metavar="YYYY-MM-DD", help="Last event date (exclusive).")
    @click.option("--select", metavar="MODELS",
                  help="Model names, space or comma separated, optionally with dbt's + operators; everything "
                       "downstream of them is included. Default: every incremental model of the framework's kind.")
    @click.option("--batch-days", type=int, default=7, show_default=True,
                  help="Days per window, at most the project var backfill_max_batch_days.")
    @_reason
    @click.option("--dry-run", is_flag=True,
                  help="Print windows, models and what each window may rewrite (Iceberg metadata only); "
                       "write nothing.")
    @click.option("--resume", metavar="RUN_ID",
                  help="Continue an interrupted or failed run after its last finished window.")
    @click.option("--abandon", metavar="RUN_ID", help="Drop an unpublished run's branches and release its lock.")
    @refusing(_refusals)
    def backfill(start, end, select, batch_days, reason, dry_run, resume, abandon, out) -> int:
        """Restate the models' rows whose event date is in [--start, --end): one `dbt run --vars` per
        window of at most --batch-days days, all writes on an Iceberg branch per table, data tests on
        the branches, then every table published at once (or none). Checkpointed (--resume),
        reversible (rollback). Give exactly one of --start/--end, --resume, --abandon."""
        from pipeline.backfill.plan import PlanError, check_reason, check_run_id, parse_date, parse_selectors

        if sum([bool(resume), bool(abandon), bool(start or end)]) != 1:
            raise PlanError("give either --start/--end (a new backfill), --resume RUN_ID or --abandon RUN_ID")
        if resume or abandon:
            if dry_run:
                # a dry run plans a new backfill; resuming or abandoning one has nothing to plan,
                # and ignoring the flag would do for real what was asked as a rehearsal
                raise PlanError("--dry-run plans a new backfill (--start/--end); it cannot be combined "
                                f"with {'--resume' if resume else '--abandon'}")
            check_run_id(resume or abandon)
        else:
            parse_date(start, "--start")
            parse_date(end, "--end")
            parse_selectors(select)
            if not dry_run:
                check_reason(reason)
        runner = _runner(out)
        if abandon:
            runner.abandon(abandon)
            out.print(f"abandoned {abandon}")
            return 0
        if resume:
            return _show_run(runner, out, runner.resume(resume))
        plan = runner.plan(start, end, select, batch_days)
        if dry_run:
            out.print(runner.dry_run(plan))
            return 0
        return _show_run(runner, out, runner.start(plan, reason))

    @command(group, "restate", short_help="Backfill only the dates of rows late beyond their window.")
    @click.option("--select", metavar="MODELS",
                  help="Declared models to restrict to, space or comma separated (no graph operators: nothing "
                       "downstream is added). Default: every declared model.")
    @click.option("--batch-days", type=int, default=7, show_default=True,
                  help="Largest window in days; consecutive dates share windows.")
    @_reason
    @click.option("--dry-run", is_flag=True,
                  help="Print the keys per model and why, the missed window's cost, the dates and windows; "
                       "write nothing.")
    @refusing(_refusals)
    def restate(select, batch_days, reason, dry_run, out) -> int:
        """Backfill only the event dates of rows that arrived after their restatement window. Reads
        audit_unreflected_changes (keys whose current source state is not in the mart and that the
        next daily run will not pick up, within var restatement_horizon_days of the watermark) and
        backfills exactly their dates through the backfill machinery: branches, gate, atomic publish,
        rollback."""
        from pipeline.backfill.plan import check_reason, parse_selectors

        parse_selectors(select)
        if not dry_run:
            check_reason(reason)
        runner = _runner(out)
        restatement = runner.restate_plan(select, batch_days)
        try:
            return _restate(runner, out, restatement, select, reason, dry_run)
        finally:
            runner.release_audit()  # the audit's rows restate_plan held (start drops them first)

    @command(group, "status", short_help="List backfill runs and model metrics, or show one run.")
    @click.argument("run_id", required=False)
    @refusing(_refusals)
    def status(run_id, out) -> int:
        """List backfill runs and each model's minimal metrics, then each volume_within_band test
        that cannot fire at its table's current volume and why, and every model whose watermark
        is ahead of its loadable data (the data test no_watermark_drift's rows); or, given RUN_ID
        (bf_...), one run's parameters, windows and tables."""
        from pipeline.backfill.plan import check_run_id

        if run_id:
            check_run_id(run_id)
        runner = _runner(out)
        for table in runner.status(run_id):
            out.print(table)
        if not run_id:
            from pipeline.drift import watermark_drift
            from pipeline.metrics import metrics_table, model_metrics
            from pipeline.volume import silent_tests

            out.print(metrics_table(model_metrics(runner.spark)))
            for line in silent_tests(runner.spark, runner.dbt):  # a guard that keeps the test quiet whatever the volume
                out.print(line, markup=False, highlight=False)
            drift = watermark_drift(runner.dbt)
            ahead = sorted({d.model_name for d in drift})
            out.print(f"watermarks ahead of their loadable data: {', '.join(ahead) or 'none'}", markup=False,
                      highlight=False)
            for line in drift:  # whole, not wrapped: the file path at its end is to copy
                out.print(f"  {line.text()}", markup=False, highlight=False, soft_wrap=True)
        return 0

    @command(group, "rollback", short_help="Restore a published backfill's tables to before it.")
    @click.argument("run_id")
    @refusing(_refusals)
    def rollback(run_id, out) -> int:
        """Restore every table of the published backfill RUN_ID (bf_...) to its snapshot before publishing."""
        from pipeline.backfill.plan import check_run_id

        check_run_id(run_id)
        _runner(out).rollback(run_id)
        out.print(f"rolled back {run_id}")
        return 0


def _restate(runner, out, restatement, select: str | None, reason: str | None, dry_run: bool) -> int:
    """`pipeline restate` once planned: the keys, the cost per date, then the restatement."""
    unaudited = runner.unaudited_models()
    if unaudited and not select:
        out.print("not audited for late changes (no config.meta.backfill_safe), so not restated: "
                  + ", ".join(unaudited))
    if restatement is None:
        out.print("nothing to restate: every change up to the restatement window is in the marts")
        return 0
    out.print(runner.restate_keys(select))
    impacts = runner.restate_impact(select)
    out.print(runner.impact_table(impacts))
    out.print(f"restating {len(restatement.windows)} windows: "
              + ", ".join(f"{w.start} .. {w.end}" for w in restatement.windows))
    if dry_run:
        out.print(runner.dry_run(restatement))
        return 0
    return _show_run(runner, out, runner.restate(restatement, reason, impacts))
