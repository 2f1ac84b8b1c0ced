"""What the console shows of backfills, from the control tables their runs wrote: the runs,
one run in full (windows, tables, downstream, the cost per date of a restatement), the version
notes of published runs, and the late-data policy's state (keys to restate, keys held pending
sign-off, the sign-offs). Reads only."""

from __future__ import annotations

import json

from rich.table import Table

from pipeline import iceberg
from pipeline.backfill import downstream, late_policy
from pipeline.backfill import plan as planning
from pipeline.backfill.control import Control, Run
from pipeline.backfill.impact import plain, span
from pipeline.backfill.plan import BackfillRefused
from pipeline.engine import Sql
from pipeline.manifest import unreflected_changes_relation


def recorded_run(control: Control, run_id: str) -> Run:
    """A recorded run, or refused naming the command that lists them."""
    runs = control.runs(run_id)
    if not runs:
        raise BackfillRefused(f"no backfill run {run_id}; `pipeline status` lists them")
    return runs[0]


def changelog(spark: Sql, limit: int = 20) -> list[str]:
    """The version notes of the latest `limit` published runs (rolled back ones too), newest
    first: when, why, the plan file it was applied from, the dates and models, the rows each
    table gained and lost, and for a restatement each date's figures before -> after. Read
    from the control tables the run wrote; one line each, for a console or a release note."""
    control = Control(spark)
    runs = [r for r in reversed(control.runs()) if r.status in ("published", "rolled_back")][:limit]
    lines: list[str] = []
    for run in runs:
        lines.append(f"{run.run_id} {run.status} {run.finished_at or '-'}: {run.reason}")
        windows = control.windows(run.run_id)
        lines.append(
            f"  event dates {run.start_date} .. {run.end_date} (end exclusive), {len(windows)} windows, "
            f"models {', '.join(run.models)}"
        )
        recorded = control.plan(run.run_id)
        lines.append(
            f"  plan {recorded.plan_file} (plan_hash {recorded.plan_hash[:12]})"
            if recorded
            else "  plan: none (started from the command line)"
        )
        totals: dict[str, list[int]] = {}
        for window in windows:
            for table, stats in (json.loads(window.table_stats) if window.table_stats else {}).items():
                total = totals.setdefault(table, [0, 0])
                total[0] += int(stats.get("added", 0))
                total[1] += int(stats.get("deleted", 0))
        lines.append(
            "  rows: "
            + (
                ", ".join(f"{table} +{added}/-{deleted}" for table, (added, deleted) in sorted(totals.items()))
                or "none"
            )
        )
        for f in control.date_figures(run.run_id):
            lines.append(
                f"  {f.model_name} {f.event_date or 'all dates'} {f.figure}: {plain(f.before_value)} -> "
                f"{plain(f.after_value)}"
            )
        lines.extend(downstream.note_lines(control.downstream(run.run_id, "published")))
        if run.status == "rolled_back":
            lines.append(f"  rolled back: {run.message}")
    return lines


def late_policy_tables(spark: Sql) -> list[Table]:
    """`pipeline status`'s view of the late-data policy: per declared model, the keys late
    beyond their lookback that the next `pipeline restate` restates and those held beyond
    their restatement window, pending sign-off; then every sign-off, and the restatement
    that spent it. Reads the audit view (each declared model's current state) once."""
    view = unreflected_changes_relation()
    if not iceberg.table_exists(spark, view):
        return []
    late = Table(
        title="late rows: restated by the next `pipeline restate`, or held beyond their restatement "
        "window until signed off (`pipeline signoff`)"
    )
    for column in ("model", "to restate", "dates", "held, pending sign-off", "held dates", "window (days)"):
        late.add_column(column, justify="right" if column in ("to restate", "held, pending sign-off") else "left")
    for row in late_policy.late_by_model(spark, iceberg.refreshed(spark, view)):
        late.add_row(
            row.model_name,
            row.not_built or str(row.restatable),
            ", ".join(row.restatable_dates) or "-",
            str(row.held),
            ", ".join(row.held_dates) or "-",
            str(row.window_days or "-"),
        )
    signed = Table(title="sign-offs of rows held beyond their restatement window")
    for column in ("sign-off", "by", "at", "reason", "keys", "models", "dates", "approved hash", "restated by"):
        signed.add_column(column)
    for row in Control(spark).signoffs():
        signed.add_row(
            row.signoff_id,
            row.signed_by,
            str(row.signed_at),
            row.reason,
            str(row.keys),
            row.models,
            span(row.first_date, row.last_date, row.dates),
            row.approved_hash[:16],
            row.restated_by or "pending: the next `pipeline restate`",
        )
    return [late, signed]


def tables(spark: Sql, run_id: str | None = None) -> list[Table]:
    """`pipeline status`: every run, or one run in full (its fields and plan, windows, tables,
    what stood downstream, and a restatement's cost per date)."""
    control = Control(spark)
    if run_id is None:
        table = Table(title="backfill runs")
        for column in ("run", "status", "range", "models", "reason", "created", "finished"):
            table.add_column(column)
        for run in control.runs():
            table.add_row(
                run.run_id,
                run.status,
                f"{run.start_date} .. {run.end_date}",
                ", ".join(run.models),
                run.reason,
                str(run.created_at),
                str(run.finished_at or "-"),
            )
        return [table]
    run = recorded_run(control, planning.check_run_id(run_id))
    shown = [_head(control, run), _windows(control, run), _tables(control, run)]
    recorded_downstream = control.downstream(run.run_id)
    if recorded_downstream:
        below = Table(
            title="downstream, after the publish (and the rollback): models, exposures to refresh, data tests"
        )
        for column in ("after", "kind", "name", "model", "status", "refresh / detail", "failures"):
            below.add_column(column)
        for r in recorded_downstream:
            below.add_row(
                r.event,
                r.resource_type,
                r.name,
                r.model_name or "-",
                r.status,
                r.detail or "-",
                "-" if r.failures is None else str(r.failures),
            )
        shown.append(below)
    figures = control.date_figures(run.run_id)
    if not figures:
        return shown
    cost = Table(
        title="the cost of the missed window, per date: before the restatement -> announced by "
        "its dry run -> held after it"
    )
    for column in ("model", "date", "late keys", "figure", "before", "announced", "after"):
        cost.add_column(column, justify="left" if column in ("model", "date", "figure") else "right")
    for f in figures:
        cost.add_row(
            f.model_name,
            "all dates" if f.event_date is None else str(f.event_date),
            str(f.late_keys),
            f.figure,
            *(
                f"{v.normalize():f}" if v is not None else "-"
                for v in (f.before_value, f.announced_value, f.after_value)
            ),
        )
    return [*shown, cost]


def _head(control: Control, run: Run) -> Table:
    head = Table(title=f"{run.run_id}: {run.status}")
    head.add_column("field")
    head.add_column("value")
    for name in (
        "start_date",
        "end_date",
        "batch_days",
        "selection",
        "models",
        "reason",
        "git_commit",
        "owner",
        "created_at",
        "heartbeat_at",
        "finished_at",
        "message",
    ):
        head.add_row(name, str(getattr(run, name)))
    recorded = control.plan(run.run_id)
    head.add_row(
        "plan",
        f"{recorded.plan_file} (plan_hash {recorded.plan_hash})"
        if recorded
        else "none (started from the command line)",
    )
    return head


def _windows(control: Control, run: Run) -> Table:
    windows = Table(title="windows")
    for column in ("#", "range", "status", "started", "finished", "rows added/deleted per table (or the error)"):
        windows.add_column(column)
    for w in control.windows(run.run_id):
        stats = json.loads(w.table_stats) if w.table_stats else {}
        windows.add_row(
            str(w.window_index),
            f"{w.window_start} .. {w.window_end}",
            w.status,
            str(w.started_at or "-"),
            str(w.finished_at or "-"),
            stats["error"][:300]
            if w.status == "failed"
            else ", ".join(f"{t.split('.')[-1]} +{s['added']}/-{s['deleted']}" for t, s in stats.items()),
        )
    return windows


def _tables(control: Control, run: Run) -> Table:
    tables_shown = Table(title="tables")
    for column in ("table", "base snapshot", "before publish", "published", "rolled back"):
        tables_shown.add_column(column)
    for t in control.tables(run.run_id):
        tables_shown.add_row(
            t.table_name,
            str(t.base_snapshot_id),
            str(t.pre_publish_snapshot_id),
            str(t.published_snapshot_id),
            str(t.rolled_back_at or "-"),
        )
    return tables_shown
