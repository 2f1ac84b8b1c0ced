"""The idempotent-backfill playbook's minimal metrics, per model of the framework's kind.

- duplicate keys per 1,000 rows: rows of the table beyond one per `unique_key` (rows with a
  null key not counted), per 1,000 rows (one read of the table);
- backfill window runtime, p50 and p95: over every finished window (`done`) of the recorded
  backfill runs that included the model, from `control.backfill_window_events` (a window runs
  all its run's models, so its runtime is theirs); exact percentiles, linear interpolation
  (Spark's `percentile`);
- watermark lag: now minus the model's stored watermark (`control.etl_watermark`);
- mismatch count: the failing rows of the reconciliation tests (`reconcile_daily_totals`, told
  by the generic test's name, whatever the node is called) that the latest backfill run of the
  model whose gate ran ran on its branches, against the current state
  (`control.backfill_gate_results`); None when no backfill of it recorded a gate (the last
  backfill shown is then its latest run).

Shown by `pipeline status` (no run id) and on the status page. Every model comes from the
manifest (`incremental_models`), none from a list of the examples'.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def model_metrics(spark: Sql) -> list[ModelMetrics]:
    """Every model of the kind's metrics, in a number of queries that does not grow with the
    project but for its tables' reads (COUNTED_TOGETHER tables a query): at 200 models one query
    per model and metric took 43 s (issue 81)."""
    models = incremental_models()
    control = {name: iceberg.table_exists(spark, f"control.{name}")
               for name in ("etl_watermark", "backfill_runs", "backfill_window_events", "backfill_gate_results")}
    counts = _counts(spark, models)
    lags = {}
    if control["etl_watermark"]:
        lags = {r[0]: r[1] for r in spark.sql(
            "select pipeline_name, unix_timestamp(current_timestamp()) - unix_timestamp(watermark_ts)"
            " from control.etl_watermark").collect()}
    windows, latest = {}, {}
    if control["backfill_runs"] and control["backfill_window_events"]:
        windows = {r[0]: r for r in spark.sql("""
            select model_name, count(*), percentile(seconds, 0.5), percentile(seconds, 0.95)
            from (select explode(from_json(r.models, 'array<string>')) as model_name,
                         unix_millis(w.finished_at) / 1000.0 - unix_millis(w.started_at) / 1000.0 as seconds
                  from control.backfill_window_events as w
                  join control.backfill_runs as r on r.run_id = w.run_id
                  where w.status = 'done')
            group by model_name""").collect()}
        # per model, the latest run of it whose gate ran (its reconciliation's failing rows),
        # else its latest run (one still running, refused, failed before its gate)
        gates = ("(select run_id, model_name, sum(coalesce(failures, 0)) as failures"
                 " from control.backfill_gate_results where generic_test = :t group by run_id, model_name)"
                 if control["backfill_gate_results"] else
                 "(select cast(null as string) as run_id, cast(null as string) as model_name,"
                 " cast(null as bigint) as failures where false)")
        latest = {r.model_name: r for r in spark.sql(f"""
            select model_name, run_id, failures from (
                select runs.model_name, runs.run_id, g.failures,
                       row_number() over (partition by runs.model_name
                                          order by g.run_id is not null desc, runs.created_at desc) as newest
                from (select explode(from_json(models, 'array<string>')) as model_name, run_id, created_at
                      from control.backfill_runs) as runs
                left join {gates} as g on g.run_id = runs.run_id and g.model_name = runs.model_name)
            where newest = 1""", args={"t": RECONCILIATION_TEST}).collect()}
    found = []
    for model in models:
        rows = duplicates = None
        if model.name in counts:
            rows, keyed, distinct = counts[model.name]
            duplicates = round((keyed - distinct) * 1000 / rows, 3) if rows else 0.0
        _, count, p50, p95 = windows.get(model.name, (None, 0, None, None))
        last = latest.get(model.name)
        found.append(ModelMetrics(model.name, rows, duplicates, lags.get(model.name), int(count),
                                  None if p50 is None else round(float(p50), 1),
                                  None if p95 is None else round(float(p95), 1),
                                  last.run_id if last else None,
                                  int(last.failures) if last and last.failures is not None else None))
    return found


COUNTED_TOGETHER = 25


def _counts(spark: Sql, models) -> dict[str, tuple[int, int, int]]:
    """Per model whose table exists: its rows, its rows with a key, its distinct keys. One listing
    of each schema's tables, then the tables counted COUNTED_TOGETHER a query."""
    present: set[str] = set()
    for schema in sorted({m.relation.split(".")[0] for m in models}):
        if spark.catalog.databaseExists(schema):
            present |= {f"{schema}.{r.tableName}".lower() for r in spark.sql(f"show tables in {schema}").collect()
                        if not getattr(r, "isTemporary", False)}
    # names from the manifest, checked there to be identifiers
    built = [m for m in models if m.relation.lower() in present]
    counts = {}
    for query in united([f"select '{m.name}', count(*), count({m.unique_key}), count(distinct {m.unique_key})"
                         f" from {m.relation}" for m in built], COUNTED_TOGETHER):
        counts.update({r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in spark.sql(query).collect()})
    return counts


# the metrics' columns and each model's values, for `pipeline status` and the status page alike
COLUMNS = ("model", "rows", "duplicate keys per 1k", "watermark lag", "backfill windows", "window p50 (s)",
           "window p95 (s)", "last backfill", "mismatches (gate)")


def cells(m: ModelMetrics) -> list[object]:
    """A model's values in the order of COLUMNS (None where unknown; the lag as text)."""
    return [m.model, m.rows, m.duplicate_keys_per_1k, lag_text(m.watermark_lag_seconds), m.backfill_windows,
            m.window_runtime_p50_s, m.window_runtime_p95_s, m.last_backfill, m.mismatch_count]


def metrics_table(metrics: list[ModelMetrics]):
    """`pipeline status`'s table of the minimal metrics."""
    from rich.table import Table

    table = Table(title="models: the playbook's minimal metrics")
    for column in COLUMNS:
        table.add_column(column, justify="left" if column in ("model", "last backfill") else "right",
                         no_wrap=column in ("model", "last backfill"))  # names whole, to copy
    for m in metrics:
        table.add_row(*("-" if v is None else str(v) for v in cells(m)))
    return table


def lag_text(seconds: object) -> str:
    """A lag in seconds, in days or hours (`-` when unknown): the status page's and status's."""
    if seconds is None:
        return "-"
    seconds = float(seconds)
    return f"{seconds / 86400:.1f} days" if seconds >= 86400 else f"{seconds / 3600:.1f} hours"
