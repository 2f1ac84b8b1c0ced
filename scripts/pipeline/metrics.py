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
from pipeline.engine import Sql
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
    found = []
    control = {name: iceberg.table_exists(spark, f"control.{name}")
               for name in ("etl_watermark", "backfill_runs", "backfill_window_events", "backfill_gate_results")}
    for model in incremental_models():
        rows = duplicates = None
        if iceberg.table_exists(spark, model.relation):
            # names from the manifest, checked there to be identifiers
            rows, keyed, distinct = spark.sql(
                f"select count(*), count({model.unique_key}), count(distinct {model.unique_key})"
                f" from {model.relation}").collect()[0]
            duplicates = round((keyed - distinct) * 1000 / rows, 3) if rows else 0.0
        lag = None
        if control["etl_watermark"]:
            lags = spark.sql("select unix_timestamp(current_timestamp()) - unix_timestamp(watermark_ts)"
                             " from control.etl_watermark where pipeline_name = :m", args={"m": model.name}).collect()
            lag = lags[0][0] if lags else None
        windows, p50, p95, last, mismatches = 0, None, None, None, None
        if control["backfill_runs"] and control["backfill_window_events"]:
            windows, p50, p95 = spark.sql("""
                select count(*), percentile(seconds, 0.5), percentile(seconds, 0.95)
                from (select unix_millis(w.finished_at) / 1000.0 - unix_millis(w.started_at) / 1000.0 as seconds
                      from control.backfill_window_events as w
                      join control.backfill_runs as r on r.run_id = w.run_id
                      where w.status = 'done' and array_contains(from_json(r.models, 'array<string>'), :m))""",
                                          args={"m": model.name}).collect()[0]
            # the latest run of the model whose gate ran (its reconciliation's failing rows), else
            # the latest run of the model (one still running, refused, failed before its gate)
            gated = "exists (select 1 from control.backfill_gate_results as g where g.run_id = r.run_id" \
                    " and g.model_name = :m and g.generic_test = :t)" if control["backfill_gate_results"] else "false"
            latest = spark.sql(f"select r.run_id, {gated} as gated from control.backfill_runs as r"
                               " where array_contains(from_json(r.models, 'array<string>'), :m)"
                               " order by gated desc, r.created_at desc limit 1",
                               args={"m": model.name, "t": RECONCILIATION_TEST}).collect()
            last = latest[0][0] if latest else None
            if latest and latest[0][1]:
                mismatches = int(spark.sql(
                    "select sum(coalesce(failures, 0)) from control.backfill_gate_results"
                    " where run_id = :r and model_name = :m and generic_test = :t",
                    args={"r": last, "m": model.name, "t": RECONCILIATION_TEST}).collect()[0][0])
        found.append(ModelMetrics(model.name, rows, duplicates, lag, int(windows),
                                  None if p50 is None else round(float(p50), 1),
                                  None if p95 is None else round(float(p95), 1), last, mismatches))
    return found


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
