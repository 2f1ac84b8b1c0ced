"""The status page: one static HTML file, no server and no script, charts as inline SVG, drawn by
the Jinja2 template `templates/status.html.j2` from what this module collects and computes.

Per pipeline: watermark and its lag, the sources' freshness (dbt source freshness), the last
runs with the rows they merged (control.run_records); for every declared incremental model
(config.meta.backfill_safe, from the manifest), its declared measures per event date over the
last N days, its current state against the model, as a chart and a table, and the records each
daily run added; per model of the kind, the playbook's minimal metrics (pipeline.metrics);
what each model's last daily run read of every table (control.run_scans); backfill runs with
their windows; and the alerts: failed runs, sources past their freshness thresholds, volume
tests that do not pass, rows late beyond their restatement window, daily runs that read more
of their own table than their declared max_scan_share, and watermarks ahead of their loadable
data (pipeline.drift: the model, both times and the quarantined versions responsible). An
incremental model that declares nothing is named on the page as having no daily reconciliation,
never left out in silence; a source with nothing landed yet is said so, not alerted on as
stale; a volume_within_band test
that cannot fire at its table's current volume is named in a section of its own after the
alerts (pipeline.volume): a standing limit of a small table, not a finding of the day, so it
does not fill the alerts every day.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import jinja2

from pipeline import iceberg
from pipeline.backfill.late_policy import late_by_model
from pipeline.dbt import NOTHING_LANDED, Dbt, Freshness
from pipeline.drift import Drift, watermark_drift
from pipeline.engine import Sql
from pipeline.manifest import IncrementalModel, incremental_models, unreflected_changes_relation
from pipeline.metrics import COLUMNS as metric_columns
from pipeline.metrics import CONSUMPTION_COLUMNS, ModelMetrics, consumption_rows, lag_text, model_metrics
from pipeline.metrics import cells as metric_cells
from pipeline.volume import silent_tests

ALERT_TESTS = ("volume_within_band", "run_delta_within_band", "no_unloaded_changes", "reconcile_daily_totals")


@dataclass
class ModelDaily:
    event_date: str
    measures: tuple[str, ...]
    # event_date, source_rows, mart_rows, then source_<i> and mart_<i> for measures[i]
    rows: list[dict] = field(default_factory=list)


@dataclass
class Report:
    generated_at: datetime
    days: int
    pipelines: list[dict] = field(default_factory=list)
    freshness: list[Freshness] = field(default_factory=list)
    runs: list[dict] = field(default_factory=list)
    # per declared model: its measures per event date, current state against the model
    daily: dict[str, ModelDaily] = field(default_factory=dict)
    undeclared: list[str] = field(default_factory=list)  # incremental models with no declaration
    backfills: list[dict] = field(default_factory=list)
    # per model, what its last daily run read of each table (control.run_scans): None when the
    # warehouse has no scan records yet
    reads: list[dict] | None = None
    metrics: list[ModelMetrics] = field(default_factory=list)  # the playbook's minimal metrics
    # per volume_within_band test that cannot fire at its table's current volume, why
    volume_silent: list[str] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)  # watermarks ahead of their loadable data
    alerts: list[str] = field(default_factory=list)


def _rows(spark: Sql, sql: str, **args) -> list[dict]:
    return [row.asDict() for row in spark.sql(sql, args=args or None).collect()]


def collect(spark: Sql, dbt: Dbt, days: int = 14, runs: int = 30) -> Report:
    if not 1 <= days <= 366 or not 1 <= runs <= 1000:
        raise ValueError(f"--days must be 1..366 and --runs 1..1000, got {days} and {runs}")
    report = Report(datetime.now(UTC), days)
    report.pipelines = _rows(
        spark,
        """
        select w.pipeline_name, w.watermark_ts, w.advanced_at,
               unix_timestamp(current_timestamp()) - unix_timestamp(w.watermark_ts) as lag_seconds,
               r.status as last_status, r.finished_at as last_run_at
        from control.etl_watermark as w
        left join (select *, row_number() over (partition by model_name order by started_at desc) as n
                   from control.run_records where window_start is null) as r
          on r.model_name = w.pipeline_name and r.n = 1
        order by w.pipeline_name""",
    )
    report.runs = _rows(
        spark,
        """
        select invocation_id, model_name, status, started_at, finished_at, window_start, window_end,
               snapshots_committed, added_records, deleted_records, changed_partitions, watermark_before,
               watermark_after, message
        from control.run_records
        where model_name in (select pipeline_name from control.etl_watermark) or window_start is not null
        order by started_at desc, model_name limit :n""",
        n=runs,
    )
    for model in incremental_models():
        if not (model.declared and model.current_state and model.event_date and model.measures):
            report.undeclared.append(model.name)
            continue
        report.daily[model.name] = ModelDaily(model.event_date, model.measures, _daily(spark, model, days))
    report.backfills = (
        _rows(
            spark,
            """
        select r.run_id, r.status, r.start_date, r.end_date, r.models, r.reason, r.created_at, r.finished_at, r.message,
               count(distinct w.window_index) as windows,
               count(distinct case when w.status = 'done' then w.window_index end) as windows_done
        from control.backfill_runs as r left join control.backfill_window_events as w on r.run_id = w.run_id
        group by all order by r.created_at desc""",
        )
        if spark.catalog.tableExists("control.backfill_runs")
        else []
    )
    report.reads = (
        _rows(
            spark,
            """
        select s.*
        from control.run_scans as s
        join (select model_name, max(started_at) as started_at from control.run_scans
              where window_start is null group by model_name) as last
          on s.model_name = last.model_name and s.started_at = last.started_at
        where s.window_start is null
        order by s.model_name, case when s.role = 'target' then 0 else 1 end, s.table_name""",
        )
        if spark.catalog.tableExists("control.run_scans")
        else None
    )
    report.metrics = model_metrics(spark)
    report.volume_silent = silent_tests(spark, dbt)
    report.freshness = dbt.freshness()
    report.drift = watermark_drift(dbt, spark)
    report.alerts = _alerts(spark, dbt, report)
    return report


def _daily(spark: Sql, model: IncrementalModel, days: int) -> list[dict]:
    """The declared measures per event date of the model's last `days` dates: the live rows of its
    current state (`not is_deleted`) against the model. Names come from the manifest, checked there
    to be identifiers."""
    date = model.event_date
    sums = lambda side: "".join(f", sum({m}) as {side}_{i}" for i, m in enumerate(model.measures))  # noqa: E731
    both = "".join(f", source.source_{i}, mart.mart_{i}" for i in range(len(model.measures)))
    return _rows(
        spark,
        f"""
        with bounds as (select max({date}) as last_day from {model.relation}),
        source as (select {date} as event_date, count(*) as source_rows{sums("source")}
                   from {model.current_state} where not is_deleted group by {date}),
        mart as (select {date} as event_date, count(*) as mart_rows{sums("mart")}
                 from {model.relation} group by {date})
        select coalesce(source.event_date, mart.event_date) as event_date, source_rows, mart_rows{both}
        from source full outer join mart on source.event_date = mart.event_date cross join bounds
        where coalesce(source.event_date, mart.event_date) > date_sub(bounds.last_day, :days)
          and coalesce(source.event_date, mart.event_date) <= bounds.last_day
        order by 1""",
        days=days,
    )


def _alerts(spark: Sql, dbt: Dbt, report: Report) -> list[str]:
    alerts = [
        f"run of {r['model_name']} ({r['invocation_id']}) at {r['started_at']}: {r['status']}: {r['message']}"
        for r in report.runs
        if r["status"] not in ("success", "skipped")
    ]
    alerts += [
        f"source {f.source} is {f.status}: latest update {f.max_loaded_at}"
        for f in report.freshness
        if f.status not in ("pass", NOTHING_LANDED)
    ]
    selection = [f"test_name:{name}" for name in ALERT_TESTS]
    for node in dbt.invoke("test", "--select", *selection, check=False):
        if node.resource_type == "test" and node.status != "pass":
            alerts.append(f"data test {node.name}: {node.status} ({node.failures} rows)")
    for late in late_by_model(spark, iceberg.refreshed(spark, unreflected_changes_relation())):
        if late.not_built:
            alerts.append(f"{late.model_name}: declared but {late.not_built}: its late changes cannot be audited")
            continue
        if late.behind:
            alerts.append(
                f"{late.model_name}: behind its upstream ({late.behind}): it did not run after them"
                f" (skipped, failed or not selected): `dbt run --select {late.model_name}`"
            )
        if late.restatable:
            alerts.append(
                f"{late.model_name}: {late.restatable} keys late beyond their window on "
                f"{', '.join(late.restatable_dates)}: `pipeline restate`"
            )
        if late.held:
            alerts.append(
                f"{late.model_name}: {late.held} keys late beyond its {late.window_days}-day restatement "
                f"window on {', '.join(late.held_dates)}: held, pending sign-off (`pipeline signoff`)"
            )
    alerts += [
        f"{r['model_name']}: its last daily run read {r['largest_scan_files']} of its table's "
        f"{r['table_data_files']} data files in one scan, more than its declared max_scan_share "
        f"{r['max_scan_share']}: has its incremental filter stopped pruning?"
        for r in report.reads or []
        if r["over_share"]
    ]
    alerts += [drift.text() for drift in report.drift]
    backfills = [b for b in report.backfills if b["status"] in ("failed", "gate_failed", "publish_refused")]
    alerts += [f"backfill {b['run_id']}: {b['status']}: {b['message']}" for b in backfills]
    return alerts


def _partitions(scan: dict) -> str:
    """The partitions the run planned for the table, with the first three named; "" when
    unknown or unpartitioned (a run_scans from before the column: None)."""
    count = scan.get("partitions_planned")
    if count is None:
        return ""
    named = (scan.get("partitions") or "").split(", ")
    return f"{count}" + (f": {', '.join(named[:3])}" + (", ..." if count > 3 else "") if count else "")


def _share(scan: dict) -> str:
    files = scan["table_data_files"]
    return (
        f"{scan['largest_scan_files']} / {files} ({scan['largest_scan_files'] / files:.0%})"
        if files
        else f"{scan['largest_scan_files']} / ?"
    )


# -- rendering: the template templates/status.html.j2 draws, these compute what it shows --------
def _table(columns: list[str], rows: Sequence[Sequence[object]], css: str = "") -> dict:
    return {"columns": columns, "rows": rows, "css": css}


def _line_chart(labels: list[str], series: dict[str, list[float | None]], title: str) -> dict:
    """A line chart's geometry for inline SVG: one polyline per series, a dot per point, axis
    labels (every seventh date, and the last)."""
    width, height, left, bottom, top, right = 760, 280, 70, 40, 20, 20
    values = [v for points in series.values() for v in points if v is not None]
    if not labels or not values:
        return {"empty": True, "title": title}
    low, high = min(0.0, min(values)), max(values) or 1.0
    plot_w, plot_h = width - left - right, height - top - bottom
    x = lambda i: left + (plot_w * i / max(1, len(labels) - 1))  # noqa: E731
    y = lambda v: top + plot_h - plot_h * (v - low) / ((high - low) or 1.0)  # noqa: E731
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c"]
    step = max(1, len(labels) // 7)
    return {
        "empty": False,
        "title": title,
        "width": width,
        "height": height,
        "left": left,
        "top": top,
        "right": left + plot_w,
        "base": top + plot_h,
        "high": f"{high:,.0f}",
        "low": f"{low:,.0f}",
        "labels": [
            {"x": f"{x(i):.1f}", "text": label[5:]}
            for i, label in enumerate(labels)
            if i % step == 0 or i == len(labels) - 1
        ],
        "series": [
            {
                "name": name,
                "colour": colours[n % len(colours)],
                "dashed": n > 0,
                "legend_x": left + 10 + 170 * n,
                "points": [(f"{x(i):.1f}", f"{y(v):.1f}") for i, v in enumerate(points) if v is not None],
            }
            for n, (name, points) in enumerate(series.items())
        ],
    }


def _bar_chart(labels: list[str], values: list[float], title: str) -> dict:
    width, height, left, bottom, top = 760, 220, 70, 30, 20
    if not values:
        return {"empty": True, "title": title}
    high = max(values) or 1.0
    plot_w, plot_h = width - left - 20, height - top - bottom
    bar = plot_w / len(values)
    return {
        "empty": False,
        "title": title,
        "width": width,
        "height": height,
        "left": left,
        "top": top,
        "right": left + plot_w,
        "base": top + plot_h,
        "high": f"{high:,.0f}",
        "bars": [
            {
                "x": f"{left + i * bar + 1:.1f}",
                "y": f"{top + plot_h - plot_h * value / high:.1f}",
                "width": f"{max(1.0, bar - 2):.1f}",
                "height": f"{plot_h * value / high:.1f}",
                "label": label,
                "value": f"{value:,.0f}",
            }
            for i, (label, value) in enumerate(zip(labels, values))
        ],
    }


def render(report: Report) -> str:
    pipelines = _table(
        ["pipeline", "watermark", "watermark lag", "last run", "last status"],
        [
            [p["pipeline_name"], p["watermark_ts"], lag_text(p["lag_seconds"]), p["last_run_at"], p["last_status"]]
            for p in report.pipelines
        ],
        "pipelines",
    )
    freshness = _table(
        ["source", "status", "latest update", "age"],
        [
            [f.source, f.status, "-" if f.max_loaded_at is None else f.max_loaded_at, lag_text(f.age_seconds)]
            for f in report.freshness
        ],
        "freshness",
    )
    runs_charts = _runs_charts(report)
    runs = _runs_table(report)
    backfills = _backfills_table(report)
    reads = _reads_table(report)
    metrics = _table(list(metric_columns), [metric_cells(m) for m in report.metrics], "metrics")
    consumption = _table(list(CONSUMPTION_COLUMNS), consumption_rows(report.metrics), "consumption")
    return (
        _template().render(
            generated_at=f"{report.generated_at:%Y-%m-%d %H:%M:%S}",
            alerts=report.alerts,
            volume_silent=report.volume_silent,
            pipelines=pipelines,
            metrics=metrics,
            consumption=consumption,
            freshness=freshness,
            days=report.days,
            daily=[_model_daily(name, model, report.days) for name, model in report.daily.items()],
            undeclared=report.undeclared,
            runs_charts=runs_charts,
            runs=runs,
            reads=reads,
            backfills=backfills,
        )
        + "\n"
    )


def _runs_charts(report: Report) -> list:
    """Per daily model, the records each of its daily runs added, oldest first."""
    return [
        # a model skipped in its invocation (a failed parent) has a record without a start
        _bar_chart(
            ["not started" if r["started_at"] is None else f"{r['started_at']:%Y-%m-%d %H:%M}" for r in runs],
            [float(r["added_records"] or 0) for r in runs],
            f"records added per {name} daily run",
        )
        for name in report.daily
        for runs in [[r for r in reversed(report.runs) if r["window_start"] is None and r["model_name"] == name]]
    ]


def _runs_table(report: Report) -> dict:
    """The run records, newest first: daily runs and backfill windows."""
    return _table(
        [
            "started",
            "model",
            "status",
            "window",
            "snapshots",
            "added",
            "deleted",
            "partitions",
            "watermark before",
            "watermark after",
            "invocation",
        ],
        [
            [
                r["started_at"],
                r["model_name"],
                r["status"],
                f"{r['window_start']} .. {r['window_end']}" if r["window_start"] else "daily",
                r["snapshots_committed"],
                r["added_records"],
                r["deleted_records"],
                r["changed_partitions"],
                r["watermark_before"],
                r["watermark_after"],
                r["invocation_id"],
            ]
            for r in report.runs
        ],
        "runs",
    )


def _backfills_table(report: Report) -> dict:
    """The backfill runs and how many of their windows are done."""
    return _table(
        ["run", "status", "range", "windows done", "models", "reason", "created", "finished"],
        [
            [
                b["run_id"],
                b["status"],
                f"{b['start_date']} .. {b['end_date']}",
                f"{b['windows_done']}/{b['windows']}",
                ", ".join(json.loads(b["models"])),
                b["reason"],
                b["created_at"],
                b["finished_at"],
            ]
            for b in report.backfills
        ],
        "backfills",
    )


def _reads_table(report: Report) -> dict | None:
    """What each run read of each table (None: the scan records are not kept)."""
    return (
        _table(
            [
                "model",
                "table",
                "role",
                "scans",
                "largest read: files / table's files",
                "files planned",
                "files skipped",
                "splits read",
                "rows read",
                "partitions planned",
                "max share",
                "filters",
                "started",
            ],
            [
                [
                    r["model_name"],
                    r["table_name"],
                    r["role"],
                    r["scans"],
                    _share(r),
                    r["data_files_planned"],
                    r["data_files_skipped"],
                    r["splits_read"],
                    r["rows_read"],
                    _partitions(r),
                    r["max_scan_share"],
                    (r["filters"] or "")[:200],
                    r["started_at"],
                ]
                for r in report.reads
            ],
            "reads",
        )
        if report.reads is not None
        else None
    )


def _template() -> jinja2.Template:
    environment = jinja2.Environment(
        loader=jinja2.PackageLoader("pipeline", "templates"), autoescape=True, undefined=jinja2.StrictUndefined
    )
    return environment.get_template("status.html.j2")


def _model_daily(name: str, model: ModelDaily, days: int) -> dict:
    """One declared model's section: a chart of its first measure, a table of every measure."""
    first = model.measures[0]
    chart = _line_chart(
        [str(d["event_date"]) for d in model.rows],
        {
            f"source {first}": [_num(d["source_0"]) for d in model.rows],
            f"mart {first}": [_num(d["mart_0"]) for d in model.rows],
        },
        f"{name}: daily {first}, source vs mart, last {days} dates",
    )
    columns = [model.event_date, "source rows", "mart rows"]
    columns += [f"{side} {m}" for m in model.measures for side in ("source", "mart", "difference")]
    rows = [
        [
            d["event_date"],
            d["source_rows"],
            d["mart_rows"],
            *[
                v
                for i in range(len(model.measures))
                for v in (d[f"source_{i}"], d[f"mart_{i}"], (d[f"source_{i}"] or 0) - (d[f"mart_{i}"] or 0))
            ],
        ]
        for d in model.rows
    ]
    return {"name": name, "chart": chart, "table": _table(columns, rows, "daily")}


def _num(value: float | int | Decimal | None) -> float | None:
    return None if value is None else float(value)


def write(spark: Sql, dbt: Dbt, out: Path, days: int = 14, runs: int = 30) -> Report:
    report = collect(spark, dbt, days, runs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(report), encoding="utf-8")
    return report
