"""The idempotent-backfill playbook's minimal metrics, per model of the framework's kind.

- duplicate keys per 1,000 rows: rows of the table beyond one per `unique_key` (rows with a
  null key not counted), per 1,000 rows (one read of the table);
- backfill window runtime, p50 and p95: over every finished window (`done`) of the recorded
  backfill runs that included the model, from `control.backfill_window_events` (a window runs
  all its run's models, so its runtime is theirs); exact percentiles, linear interpolation
  (Spark's `percentile`);
- watermark lag: now minus the model's stored watermark (`control.etl_watermark`); for a model
  over models (an aggregate: it keeps no watermark), now minus the watermark its upstream had
  after the latest upstream run whose changes the model holds (`consumption`, the largest over
  its upstreams);
- mismatch count: the failing rows of the reconciliation tests (`reconcile_daily_totals`, told
  by the generic test's name, whatever the node is called) that the latest backfill run of the
  model whose gate ran ran on its branches, against the current state
  (`control.backfill_gate_results`); None when no backfill of it recorded a gate (the last
  backfill shown is then its latest run).

Shown by `pipeline status` (no run id) and on the status page. Every model comes from the
manifest (`incremental_models`), none from a list of the examples'.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from pipeline import iceberg
from pipeline.engine import Sql, united
from pipeline.manifest import incremental_models

RECONCILIATION_TEST = "reconcile_daily_totals"


@dataclass(frozen=True)
class ModelMetrics:
    model: str
    rows: int | None  # None: the table does not exist (not built yet)
    duplicate_keys_per_1k: float | None
    watermark_lag_seconds: int | None
    backfill_windows: int
    window_runtime_p50_s: float | None
    window_runtime_p95_s: float | None
    last_backfill: str | None
    mismatch_count: int | None
    consumed: tuple[Consumption, ...] = field(default=())  # a model over models' upstreams


@dataclass(frozen=True)
class Consumption:
    """How far a model over models has consumed one of its upstream models' change records: the
    answer to "is this aggregate fresh?"."""

    model: str
    upstream: str
    # the latest upstream run (its start) whose changes the model holds; None: none yet
    current_with: datetime | None
    runs_behind: int  # the upstream's runs recorded since (their changes not yet in the model)
    # now minus the upstream's watermark after that run (None: the upstream keeps none)
    watermark_lag_seconds: int | None
    # where the point comes from: "mark" (a model maintained by deltas: its table's current
    # snapshot names the change records it holds) or "last run" (its latest successful daily run)
    read_from: str


def _watermark_lags(spark: Sql) -> dict:
    """Per pipeline (a model of the kind), the seconds its watermark is behind now."""
    return {
        r[0]: r[1]
        for r in spark.sql(
            "select pipeline_name, unix_timestamp(current_timestamp()) - unix_timestamp(watermark_ts)"
            " from control.etl_watermark"
        ).collect()
    }


def _backfill_figures(spark: Sql, control: dict[str, bool]) -> tuple[dict, dict]:
    """Per model, its backfill windows done (how many, their median and 95th percentile seconds),
    and its latest backfill run whose gate ran (with its reconciliation's failing rows), else its
    latest run; empty without the backfill control tables (`control`: which exist)."""
    windows: dict = {}
    latest: dict = {}
    if not (control["backfill_runs"] and control["backfill_window_events"]):
        return windows, latest
    windows = {
        r[0]: r
        for r in spark.sql("""
        select model_name, count(*), percentile(seconds, 0.5), percentile(seconds, 0.95)
        from (select explode(from_json(r.models, 'array<string>')) as model_name,
                     unix_millis(w.finished_at) / 1000.0 - unix_millis(w.started_at) / 1000.0 as seconds
              from control.backfill_window_events as w
              join control.backfill_runs as r on r.run_id = w.run_id
              where w.status = 'done')
        group by model_name""").collect()
    }
    # per model, the latest run of it whose gate ran (its reconciliation's failing rows),
    # else its latest run (one still running, refused, failed before its gate)
    gates = (
        "(select run_id, model_name, sum(coalesce(failures, 0)) as failures"
        " from control.backfill_gate_results where generic_test = :t group by run_id, model_name)"
        if control["backfill_gate_results"]
        else "(select cast(null as string) as run_id, cast(null as string) as model_name,"
        " cast(null as bigint) as failures where false)"
    )
    latest = {
        r.model_name: r
        for r in spark.sql(
            f"""
        select model_name, run_id, failures from (
            select runs.model_name, runs.run_id, g.failures,
                   row_number() over (partition by runs.model_name
                                      order by g.run_id is not null desc, runs.created_at desc) as newest
            from (select explode(from_json(models, 'array<string>')) as model_name, run_id, created_at
                  from control.backfill_runs) as runs
            left join {gates} as g on g.run_id = runs.run_id and g.model_name = runs.model_name)
        where newest = 1""",
            args={"t": RECONCILIATION_TEST},
        ).collect()
    }
    return windows, latest


def model_metrics(spark: Sql) -> list[ModelMetrics]:
    """Every model of the kind's metrics, in a number of queries that does not grow with the
    project but for its tables' reads (COUNTED_TOGETHER tables a query): at 200 models one query
    per model and metric took 43 s (issue 81)."""
    models = incremental_models()
    control = {
        name: iceberg.table_exists(spark, f"control.{name}")
        for name in ("etl_watermark", "backfill_runs", "backfill_window_events", "backfill_gate_results")
    }
    present = _present_tables(spark, models)
    counts = _counts(spark, models, present)
    consumed = consumption(spark, models, present)
    lags = _watermark_lags(spark) if control["etl_watermark"] else {}
    windows, latest = _backfill_figures(spark, control)
    found = []
    for model in models:
        rows = duplicates = None
        if model.name in counts:
            rows, keyed, distinct = counts[model.name]
            duplicates = round((keyed - distinct) * 1000 / rows, 3) if rows else 0.0
        _, count, p50, p95 = windows.get(model.name, (None, 0, None, None))
        last = latest.get(model.name)
        lag = lags.get(model.name)
        if model.name in consumed:  # a model over models: its upstreams' watermarks, as it holds them
            known = [c.watermark_lag_seconds for c in consumed[model.name] if c.watermark_lag_seconds is not None]
            lag = max(known) if known else None
        found.append(
            ModelMetrics(
                model.name,
                rows,
                duplicates,
                lag,
                int(count),
                None if p50 is None else round(float(p50), 1),
                None if p95 is None else round(float(p95), 1),
                last.run_id if last else None,
                int(last.failures) if last and last.failures is not None else None,
                consumed.get(model.name, ()),
            )
        )
    return found


# a model maintained by deltas names in its current snapshot's summary the change records it holds
# (macro consumption_mark_text): backfill_safe.consumed|<the latest record's run start>|<invocation>
CONSUMED_MARK = "backfill_safe.consumed|"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d{1,6})?")


def consumption(spark: Sql, models, present: set[str]) -> dict[str, tuple[Consumption, ...]]:
    """Per model over models whose table exists: for each upstream model, the latest upstream run
    whose change records (control.<upstream's table>__changes) it holds, the upstream's runs
    since, and the upstream's watermark lag as of that run. The point held is its table's mark
    when its current snapshot carries one (a model maintained by deltas: exact, a rollback takes
    it back), else its latest successful daily run's start (a run recomputes what every upstream
    run before it changed). A few queries whatever the number of models (COUNTED_TOGETHER)."""
    by_name = {m.name: m for m in models}
    over = [m for m in models if m.over_models and m.relation.lower() in present]
    if not over or "control.run_records" not in present:
        return {}
    marks = {}
    for query in united(
        [
            f"select '{m.name}', s.summary['wap.id'] from {m.relation}.refs as r join {m.relation}"
            ".snapshots as s on s.snapshot_id = r.snapshot_id where r.name = 'main'"
            for m in over
        ],
        COUNTED_TOGETHER,
    ):
        for name, mark in spark.sql(query).collect():
            position = (mark or "").split("|")[1] if (mark or "").startswith(CONSUMED_MARK) else ""
            if _TIMESTAMP.fullmatch(position):
                marks[name] = position.replace("T", " ")
    names = ", ".join(f"'{m.name}'" for m in over)
    last_runs = {
        r[0]: r[1]
        for r in spark.sql(
            "select model_name, cast(max(started_at) as string) from control.run_records where status = 'success'"
            f" and window_start is null and model_name in ({names}) group by model_name"
        ).collect()
    }
    pairs = [
        (m, upstream)
        for m in over
        for upstream in m.upstream_models
        if upstream in by_name and by_name[upstream].change_records.lower() in present
    ]
    held = {}
    selects = []
    for m, upstream in pairs:
        point = marks.get(m.name) or last_runs.get(m.name)
        bound = f"timestamp'{point}'" if point and _TIMESTAMP.fullmatch(point) else "timestamp'0001-01-01 00:00:00'"
        selects.append(
            f"select '{m.name}', '{upstream}', max(case when _run_started_at <= {bound} then _run_started_at end),"
            f" max_by(case when _run_started_at <= {bound} then _invocation_id end,"
            f" case when _run_started_at <= {bound} then _run_started_at end),"
            f" count(distinct case when _run_started_at > {bound} then _invocation_id end)"
            f" from {by_name[upstream].change_records}"
        )
    for query in united(selects, COUNTED_TOGETHER):
        held.update({(r[0], r[1]): (r[2], r[3], int(r[4])) for r in spark.sql(query).collect()})
    invocations = sorted({i for _, i, _ in held.values() if i and _UUID.fullmatch(i)})
    lags = {}
    if invocations:
        lags = {
            (r[0], r[1]): r[2]
            for r in spark.sql(
                "select model_name, invocation_id, max(unix_timestamp(current_timestamp())"
                " - unix_timestamp(watermark_after)) from control.run_records where watermark_after is not null"
                f" and invocation_id in ({', '.join(repr(i) for i in invocations)}) group by model_name, invocation_id"
            ).collect()
        }
    found: dict[str, tuple[Consumption, ...]] = {}
    for m, upstream in pairs:
        current_with, invocation, behind = held[(m.name, upstream)]
        lag = lags.get((upstream, invocation))
        found[m.name] = (
            *found.get(m.name, ()),
            Consumption(
                m.name,
                upstream,
                current_with,
                behind,
                None if lag is None else int(lag),
                "mark" if m.name in marks else "last run",
            ),
        )
    return found


CONSUMPTION_COLUMNS = ("model", "upstream", "current with (its run)", "upstream runs since", "watermark lag", "from")


def consumption_rows(metrics: list[ModelMetrics]) -> list[list[str]]:
    """How far each model over models has consumed each of its upstreams, a row each, as
    `pipeline status` and the status page show it (CONSUMPTION_COLUMNS)."""
    return [
        [
            c.model,
            c.upstream,
            "-" if c.current_with is None else f"{c.current_with:%Y-%m-%d %H:%M:%S}",
            str(c.runs_behind),
            lag_text(c.watermark_lag_seconds),
            c.read_from,
        ]
        for m in metrics
        for c in m.consumed
    ]


def consumption_table(metrics: list[ModelMetrics]):
    """`pipeline status`'s table of how far each model over models has consumed its upstreams;
    None when the project has none built."""
    from rich.table import Table

    rows = consumption_rows(metrics)
    if not rows:
        return None
    table = Table(title="models over models: the upstream runs they hold")
    for column in CONSUMPTION_COLUMNS:
        table.add_column(
            column,
            justify="left" if column in ("model", "upstream", "from") else "right",
            no_wrap=column in ("model", "upstream"),
        )
    for row in rows:
        table.add_row(*row)
    return table


COUNTED_TOGETHER = 25


def _present_tables(spark: Sql, models) -> set[str]:
    """schema.table (lower case) of every table in the models' schemas and the control schema:
    one listing of each."""
    present: set[str] = set()
    for schema in sorted({m.relation.split(".")[0] for m in models} | {"control"}):
        if spark.catalog.databaseExists(schema):
            present |= {
                f"{schema}.{r.tableName}".lower()
                for r in spark.sql(f"show tables in {schema}").collect()
                if not getattr(r, "isTemporary", False)
            }
    return present


def _counts(spark: Sql, models, present: set[str]) -> dict[str, tuple[int, int, int]]:
    """Per model whose table exists (`present`: _present_tables): its rows, its rows with a key,
    its distinct keys, the tables counted COUNTED_TOGETHER a query."""
    # names from the manifest, checked there to be identifiers
    built = [m for m in models if m.relation.lower() in present]
    counts = {}
    for query in united(
        [
            f"select '{m.name}', count(*), count({m.unique_key}), count(distinct {m.unique_key}) from {m.relation}"
            for m in built
        ],
        COUNTED_TOGETHER,
    ):
        counts.update({r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in spark.sql(query).collect()})
    return counts


# the metrics' columns and each model's values, for `pipeline status` and the status page alike
COLUMNS = (
    "model",
    "rows",
    "duplicate keys per 1k",
    "watermark lag",
    "backfill windows",
    "window p50 (s)",
    "window p95 (s)",
    "last backfill",
    "mismatches (gate)",
)


def cells(m: ModelMetrics) -> list[object]:
    """A model's values in the order of COLUMNS (None where unknown; the lag as text)."""
    return [
        m.model,
        m.rows,
        m.duplicate_keys_per_1k,
        lag_text(m.watermark_lag_seconds),
        m.backfill_windows,
        m.window_runtime_p50_s,
        m.window_runtime_p95_s,
        m.last_backfill,
        m.mismatch_count,
    ]


def metrics_table(metrics: list[ModelMetrics]):
    """`pipeline status`'s table of the minimal metrics."""
    from rich.table import Table

    table = Table(title="models: the playbook's minimal metrics")
    for column in COLUMNS:
        table.add_column(
            column,
            justify="left" if column in ("model", "last backfill") else "right",
            no_wrap=column in ("model", "last backfill"),
        )  # names whole, to copy
    for m in metrics:
        table.add_row(*("-" if v is None else str(v) for v in cells(m)))
    return table


def lag_text(seconds: float | int | Decimal | None) -> str:
    """A lag in seconds, in days or hours (`-` when unknown): the status page's and status's."""
    if seconds is None:
        return "-"
    seconds = float(seconds)
    return f"{seconds / 86400:.1f} days" if seconds >= 86400 else f"{seconds / 3600:.1f} hours"
