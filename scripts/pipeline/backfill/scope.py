"""What a backfill covers and what it would touch: the models selected and everything
incremental downstream of them, the plan of their windows, and the estimate its dry run and its
plan file show (per window: partitions, live rows, data files and bytes; from the tables and
Iceberg's metadata). Writes nothing."""

from __future__ import annotations

import subprocess
from datetime import UTC, date, datetime

from rich.table import Table

from pipeline import iceberg, paths
from pipeline.backfill import plan as planning
from pipeline.backfill.plan import BackfillRefused, Plan
from pipeline.dbt import Dbt
from pipeline.engine import Sql
from pipeline.manifest import IncrementalModel, code_fingerprint, incremental_models


def max_batch_days() -> int:
    """var backfill_max_batch_days of the project (default 31)."""
    try:
        return int(paths.project_var("backfill_max_batch_days"))  # type: ignore[call-overload]  # a yml value
    except KeyError:
        return 31


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=paths.PROJECT_DIR, capture_output=True, text=True, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def models_in_scope(dbt: Dbt, spark: Sql, selectors: list[str]) -> list[IncrementalModel]:
    """The incremental models selected and everything downstream of them."""
    dbt.invoke("parse")
    incremental = {m.name: m for m in incremental_models()}
    if selectors:
        downstream = [s if s.endswith("+") else s + "+" for s in selectors]
        names = set(dbt.ls("--resource-type", "model", "--select", *downstream))
        unknown = [s.strip("+") for s in selectors if s.strip("+") not in names]
        if unknown:
            raise planning.PlanError(f"--select {unknown[0]!r} matches no model of the project")
        names &= set(incremental)
    else:
        names = set(incremental)
    if not names:
        raise planning.PlanError(f"--select {' '.join(selectors)!r} reaches no incremental model")
    models = [incremental[name] for name in sorted(names)]
    missing = [m.relation for m in models if not iceberg.table_exists(spark, m.relation)]
    if missing:
        raise BackfillRefused(f"{missing[0]} does not exist yet: build it first (dbt build), then backfill")
    return models


def plan(dbt: Dbt, spark: Sql, start: str, end: str, select: str | None, batch_days: int) -> Plan:
    """A backfill of [start, end) in windows of `batch_days`, of the models selected."""
    first = planning.parse_date(start, "--start")
    last = planning.parse_date(end, "--end")
    selectors = planning.parse_selectors(select)
    windows = planning.windows(first, last, batch_days, max_batch_days())
    models = models_in_scope(dbt, spark, selectors)
    return Plan(first, last, batch_days, " ".join(selectors) or "(all)", models, windows)


def plan_windows(dbt: Dbt, spark: Sql, windows: list[tuple[date, date]], select: str | None) -> Plan:
    """A backfill of given windows (a recorded run's, replayed from its plan): each at most
    var backfill_max_batch_days long, the models selected and what is downstream of them."""
    longest = max((end - start).days for start, end in windows)
    if longest > max_batch_days():
        raise planning.PlanError(
            f"a window of {longest} days is longer than the project var backfill_max_batch_days ({max_batch_days()})"
        )
    selectors = planning.parse_selectors(select)
    models = models_in_scope(dbt, spark, selectors)
    return Plan(
        windows[0][0],
        windows[-1][1],
        longest,
        " ".join(selectors) or "(all)",
        models,
        [planning.Window(n, start, end) for n, (start, end) in enumerate(windows)],
    )


def plan_document(
    dbt: Dbt,
    spark: Sql,
    plan: Plan,
    kind: str,
    reason: str,
    parameters: dict,
    late_keys: list[dict] | None = None,
    impacts: list[dict] | None = None,
) -> dict:
    """What `--plan-out` writes (pipeline.backfill.plan_file): the plan's scope, the code and
    data it was made on, its estimate (dry_run's figures) and its gates (the data tests run on
    the branches). A restatement's scope also holds its late keys per model (`late_keys`: the
    held audit's rows) and its estimate the cost of the missed window per date (`impacts`, as a
    plan file holds them)."""
    names = [m.name for m in plan.models]
    scope: dict = {
        "models": names,
        "tables": [m.relation for m in plan.models],
        "windows": [{"start": str(w.start), "end": str(w.end)} for w in plan.windows],
    }
    if kind == "restate":
        scope["late_keys"] = late_keys or []
    figures = {model.name: in_window(spark, model, plan.windows) for model in plan.models}
    estimate: dict = {
        "windows": [
            {
                "window": f"{w.start} .. {w.end}",
                "model": m.name,
                **dict(zip(("partitions", "live_rows", "data_files", "bytes"), figures[m.name][w.index])),
            }
            for w in plan.windows
            for m in plan.models
        ]
    }
    sources = sorted({relation for model in plan.models for relation in model.sources})
    estimate["source_records_read_per_window"] = sum(metadata_totals(spark, s)[1] for s in sources)
    if impacts:
        estimate["missed_window_cost"] = impacts
    return {
        "plan_version": 1,
        "kind": kind,
        "reason": planning.check_reason(reason),
        "planned_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "parameters": parameters,
        "scope": scope,
        "code": {"git_commit": git_commit(), **code_fingerprint(names)},
        "data": {"snapshots": {t: iceberg.current_snapshot_id(spark, t) for t in sorted({*scope["tables"], *sources})}},
        "estimate": estimate,
        "gates": sorted(dbt.ls("--resource-type", "test", "--select", *names)),
    }


def dry_run(spark: Sql, plan: Plan) -> Table:
    """What the backfill would touch; writes nothing. The rows are the live rows of each
    window, counted from the tables; partitions, data files and MB are Iceberg's metadata."""
    table = Table(title=f"backfill plan {plan.start} .. {plan.end} (end exclusive), {len(plan.windows)} windows")
    for column in ("window", "model", "partitions", "live rows", "data files", "MB"):
        table.add_column(column, justify="left" if column in ("window", "model") else "right")
    figures = {model.name: in_window(spark, model, plan.windows) for model in plan.models}
    for window in plan.windows:
        for model in plan.models:
            partitions, rows, files, size = figures[model.name][window.index]
            table.add_row(
                f"{window.index}: {window.start} .. {window.end}",
                model.name,
                str(partitions),
                str(rows),
                str(files),
                f"{size / 1e6:.1f}",
            )
    sources = sorted({relation for model in plan.models for relation in model.sources})
    # the raw tables are appended to only (no delete files): their records are their rows
    raw_records = sum(metadata_totals(spark, relation)[1] for relation in sources)
    table.caption = (
        f"each window is one `dbt run` of {len(plan.models)} models; the staging views read all "
        f"{raw_records} records of their sources ({', '.join(sources) or 'none'}: every version "
        "landed) per window to pick current versions; live rows and partitions above are what the "
        "MERGEs may rewrite (the whole table for a model without an event date partition); data "
        "files and MB also hold the rows merge-on-read deleted, until `pipeline maintain` compacts them"
    )
    return table


def partitions_rewritten(spark: Sql, plan: Plan) -> int:
    """The partitions a backfill of `plan` rewrites, as the tables hold them now (Iceberg
    metadata, dry_run's figures): per model, its partitions in each window; a table not
    partitioned by its event date counts its partitions once. What a restatement's cost
    ceiling (var restatement_max_partitions, `pipeline restate --max-partitions`) bounds."""
    total = 0
    for model in plan.models:
        partitions = [f[0] for f in in_window(spark, model, plan.windows).values()]
        total += sum(partitions) if partitioned_by_event_date(spark, model) else max(partitions, default=0)
    return total


def partitioned_by_event_date(spark: Sql, model: IncrementalModel) -> bool:
    """Whether a model's table exists and is partitioned by its event date (else in_window
    gives each window the whole table's figures)."""
    relation = iceberg.checked_table(model.relation)
    return (
        bool(model.event_date)
        and iceberg.table_exists(spark, relation)
        and model.event_date in iceberg.partition_fields(spark, relation)
    )


def in_window(
    spark: Sql, model: IncrementalModel, windows: list[planning.Window]
) -> dict[int, tuple[int, int, int, int]]:
    """Per window (by index): partitions, live rows, data files and bytes of a model's table
    in it, by its event date (declared, else its first partition column); the whole table's
    when it is not partitioned by it. The rows are counted from the table, one query for all
    windows: the marts MERGE in merge-on-read mode, which leaves the rows a MERGE deletes or
    updates in their data files (position delete files mark them), so the metadata's
    record_count counts rows no reader sees. The rest is the metadata's."""
    relation = iceberg.checked_table(model.relation)
    if not iceberg.table_exists(spark, relation):
        return {window.index: (0, 0, 0, 0) for window in windows}
    if not partitioned_by_event_date(spark, model):
        partitions, _, files, size = metadata_totals(spark, relation)
        rows = int(spark.sql(f"select count(*) from {relation}").collect()[0][0])
        return {window.index: (partitions, rows, files, size) for window in windows}
    assert model.event_date is not None  # partitioned by it
    column = iceberg.checked_column(model.event_date)

    def within(start: date, end: date) -> str:
        return f"{column} >= date'{start.isoformat()}' and {column} < date'{end.isoformat()}'"

    which = " ".join(f"when {within(w.start, w.end)} then {w.index}" for w in windows)
    live = {
        row[0]: int(row[1])
        for row in spark.sql(
            f"select case {which} end as window_index, count(*) from {relation}"
            f" where {within(min(w.start for w in windows), max(w.end for w in windows))}"
            " group by 1"
        ).collect()
    }
    figures = {}
    for window in windows:
        partitions, _, files, size = metadata_totals(spark, relation, window, column)
        figures[window.index] = (partitions, live.get(window.index, 0), files, size)
    return figures


def metadata_totals(
    spark: Sql, relation: str, window: planning.Window | None = None, column: str | None = None
) -> tuple[int, int, int, int]:
    """Partitions, records, data files and their bytes, from Iceberg's partitions metadata
    table. Records are those of the data files: with merge-on-read deletes, more than the
    rows a reader sees."""
    if not iceberg.table_exists(spark, relation):
        return (0, 0, 0, 0)
    where = f"where partition.`{column}` >= :s and partition.`{column}` < :e" if window and column else ""
    args = {"s": window.start, "e": window.end} if window else {}
    row = spark.sql(
        "select count(*), coalesce(sum(record_count), 0), coalesce(sum(file_count), 0),"
        f" coalesce(sum(total_data_file_size_in_bytes), 0) from {relation}.partitions {where}",
        args=args,
    ).collect()[0]
    return tuple(int(v) for v in row)  # type: ignore[return-value]
