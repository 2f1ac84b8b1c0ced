"""The performance benchmark's machinery: event-log attribution, Iceberg scan metrics, the
targets and the report (no Spark); the data generator on the shared session; and, marked
`bench` (left out of the default run: five JVMs, several minutes), the whole command at a tiny
scale."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import bench_incremental, bench_metrics
from harness.bench_metrics import Window


def _task(launch_ms: int, run_ms: int, cpu_ns: int, rows: int, read: int, accumulables=()) -> str:
    return json.dumps({
        "Event": "SparkListenerTaskEnd", "Stage ID": 1,
        "Task Info": {"Launch Time": launch_ms, "Finish Time": launch_ms + run_ms,
                      "Accumulables": [{"ID": i, "Update": u} for i, u in accumulables]},
        "Task Metrics": {"Executor Run Time": run_ms, "Executor CPU Time": cpu_ns, "JVM GC Time": 0,
                         "Memory Bytes Spilled": 0,
                         "Input Metrics": {"Bytes Read": read, "Records Read": rows},
                         "Shuffle Read Metrics": {"Remote Bytes Read": 0, "Local Bytes Read": 7},
                         "Shuffle Write Metrics": {"Shuffle Bytes Written": 5},
                         "Output Metrics": {"Bytes Written": 3, "Records Written": 1}},
    })


def _scan_plan(execution: int, time_ms: int, table: str, first_id: int) -> str:
    scan = {"nodeName": "BatchScan " + table, "simpleString": f"BatchScan spark_catalog.{table}[a#1] ...",
            "children": [], "metrics": [
                {"name": "number of result data files", "accumulatorId": first_id},
                {"name": "number of skipped data files", "accumulatorId": first_id + 1},
                {"name": "total data file size (bytes)", "accumulatorId": first_id + 2},
                {"name": "number of row deletes applied", "accumulatorId": first_id + 3},
                {"name": "number of output rows", "accumulatorId": first_id + 4}]}
    return json.dumps({"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",
                       "executionId": execution, "time": time_ms,
                       "sparkPlanInfo": {"nodeName": "MergeRows", "simpleString": "", "metrics": [], "children": [scan]}})


@pytest.mark.fast
def test_event_log_tasks_and_scans_are_attributed_to_phases_by_time():
    lines = [
        _scan_plan(0, 1_000, "raw.order_items", 10),
        _task(1_100, 400, 300_000_000, 100, 1000, accumulables=[(13, 2), (14, 99)]),
        _task(1_200, 600, 500_000_000, 50, 500, accumulables=[(13, 1)]),
        json.dumps({"Event": "org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates",
                    "executionId": 0, "accumUpdates": [[10, 3], [11, 362], [12, 4096], [14, 7]]}),
        _scan_plan(1, 5_000, "marts.fct_order_item", 20),
        json.dumps({"Event": "org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates",
                    "executionId": 1, "accumUpdates": [[20, 18], [21, 347]]}),
        _task(5_100, 1000, 900_000_000, 10, 10),
        _task(9_000, 1000, 900_000_000, 10, 10),  # outside every window: left out
        "",
    ]
    costs = bench_metrics.parse_event_log(lines, [Window("daily", 900, 2_000), Window("backfill", 4_000, 6_000)])
    daily, backfill = costs["daily"], costs["backfill"]
    assert (daily.tasks, daily.task_s, daily.cpu_s, daily.input_rows, daily.input_bytes) == (2, 1.0, 0.8, 150, 1500)
    assert (daily.shuffle_read_bytes, daily.shuffle_write_bytes, daily.output_rows, daily.sql_executions) == (14, 10, 2, 1)
    # driver metrics (files, bytes) once per scan; task-side metrics (deletes applied) summed
    assert daily.scans == {"raw.order_items": {"data_files_scanned": 3, "data_files_skipped": 362,
                                               "data_bytes_scanned": 4096, "row_deletes_applied": 3}}
    assert backfill.tasks == 1 and backfill.scans == {"marts.fct_order_item": {"data_files_scanned": 18,
                                                                                 "data_files_skipped": 347}}


@pytest.mark.fast
def test_event_log_reader_wants_one_finished_log(tmp_path: Path):
    (tmp_path / "local-1.inprogress").write_text("{}\n")
    with pytest.raises(RuntimeError, match="expected one finished"):
        list(bench_metrics.event_log_lines(tmp_path))
    (tmp_path / "local-2").write_text('{"Event": "SparkListenerLogStart"}\n')
    assert list(bench_metrics.event_log_lines(tmp_path)) == ['{"Event": "SparkListenerLogStart"}\n']


@pytest.mark.fast
def test_peak_memory_of_this_process_is_read_and_reset():
    peak = bench_metrics.peak_rss_mb()
    assert peak is not None and peak > 1
    if bench_metrics.reset_peak():
        assert bench_metrics.peak_rss_mb() <= peak + 1


def _phase(wall: float, cpu: float, changed: dict[str, int] | None = None, differing: int | None = 0) -> dict:
    result = {"wall_s": wall, "dbt_node_s": wall * 0.9, "jvm_peak_mb": 900.0, "python_peak_mb": 200.0,
              "spark": {"task_s": cpu * 2, "cpu_s": cpu, "input_rows": 1_500_000, "input_bytes": 3 * 1024 ** 2,
                        "scans": {"marts.fct_order_item": {"data_files_scanned": 20, "data_files_skipped": 345}}},
              "snapshots": {f"marts.{t}": {"changed_partitions": n, "added_records": 10, "deleted_records": 5}
                            for t, n in (changed or {}).items()}}
    if differing is not None:
        result["equality"] = {"fct_order_item": {"differing": differing}, "fct_orders": {"differing": 0}}
    return result


def _report() -> dict:
    def scale(daily_wall: float, changed: int) -> dict:
        return {"setup": {"raw_rows": {"orders": 400, "order_items": 1900, "products": 5000, "customers": 100},
                          "facts": {"fct_order_item": {"rows": 1000, "files": 365, "avg_file_kb": 12.0},
                                    "fct_orders": {"rows": 400}},
                          "next_day": {"landed": {"orders": 40, "order_items": 300}, "order_dates_touched": 20,
                                       "order_dates_touched_before_lookback": 12}},
                "phases": {"full": _phase(100, 80, differing=None),
                           "daily": _phase(daily_wall, 5, {"fct_order_item": changed, "fct_orders": 20}),
                           "microbatch": _phase(30, 20, differing=37),
                           "daily_mor:daily": _phase(9, 4, {"fct_order_item": 20, "fct_orders": 20})}}
    return {"machine": {"cores": 2, "cpu": "test cpu", "memory_gb": 24, "load_average_at_start": (8.0, 8.5, 9.0)},
            "commit": "abc1234", "finished_at": "2026-11-23 02:00 UTC", "note": "under contention",
            "scales": {"1000000": scale(8, 20), "20000000": scale(12, 19)}}


@pytest.mark.fast
def test_targets_are_judged_from_the_figures():
    report = _report()
    found = bench_incremental.targets(report)
    assert found["daily_vs_full_at_largest"]["ratio"] == pytest.approx(0.12)
    assert found["daily_vs_full_at_largest"]["met"] is False
    assert found["daily_growth"]["ratio"] == pytest.approx(1.5) and found["daily_growth"]["met"] is True
    assert found["changed_partitions_equal_dates_touched"]["1000000"]["met"] is True
    assert found["changed_partitions_equal_dates_touched"]["20000000"]["met"] is False
    assert found["equal_to_full_refresh"]["1000000"] == {"daily": True}


@pytest.mark.fast
def test_targets_take_the_median_of_repeated_daily_runs():
    """--daily-repeats: one slow or fast run of the same commit does not decide a target."""
    report = _report()
    large, small = report["scales"]["20000000"]["phases"], report["scales"]["1000000"]["phases"]
    large["daily#2:daily"], large["daily#3:daily"] = _phase(9, 5), _phase(30, 5)  # 12, 9, 30: median 12
    large["daily#2:read_after_daily"] = _phase(1, 1)  # what a reader pays: not a daily run
    small["daily#2:daily"] = _phase(6, 4)  # 8, 6: median 7
    found = bench_incremental.targets(report)
    assert found["daily_vs_full_at_largest"]["daily_walls"] == [12, 9, 30]
    assert found["daily_vs_full_at_largest"]["ratio"] == pytest.approx(0.12)
    assert found["daily_growth"]["ratio"] == pytest.approx(12 / 7) and found["daily_growth"]["met"] is False
    report["targets"] = found
    text = bench_incremental.markdown(report)
    assert "daily / full refresh wall time at 20.0M: 12.0% (medians of 12, 9, 30 s) (target <= 10%: not met" in text
    assert "daily wall time 1.0M -> 20.0M: x1.71 (medians of 8, 6 s and 12, 9, 30 s) (target <= x1.5: not met" in text
    assert "| 20.0M | daily#3:daily |" in text


@pytest.mark.fast
def test_markdown_report_has_a_row_per_phase_the_tuning_and_the_targets():
    report = _report()
    report["targets"] = bench_incremental.targets(report)
    text = bench_incremental.markdown(report)
    assert "2 cores (test cpu), 24 GB; load average at start 8.0, 8.5, 9.0. under contention" in text
    assert "| 1.0M | daily incremental (`dbt run`, whole graph) | 8 | 7 | 10 | 5 | 1.5M | 3.0 MB | 20/365 / - | 20 / 20 |" in text
    assert "| 20.0M | baseline (a): dbt microbatch, fct_order_item, 4 daily batches |" in text
    assert "37 rows differ" in text
    assert "| 1.0M | daily_mor:daily |" in text
    assert "daily / full refresh wall time at 20.0M: 12.0% (target <= 10%: not met" in text
    assert "20.0M: daily changed partitions {'fct_order_item': 19, 'fct_orders': 20} vs 20 event dates touched: not met" in text


@pytest.mark.fast
def test_baseline_models_are_off_unless_the_benchmark_asks(tmp_path: Path):
    """`dbt ls` of the project lists no benchmark model; with var bench_baselines it lists all three."""
    from dbt.cli.main import dbtRunner

    from pipeline import paths

    def models(*extra: str) -> list[str]:
        result = dbtRunner().invoke(["--quiet", "--log-level", "none", "ls", "--resource-type", "model", "--output",
                                     "name", "--project-dir", str(paths.PROJECT_DIR), "--profiles-dir",
                                     str(paths.PROFILES_DIR), "--target-path", str(tmp_path / "target"), *extra])
        assert result.success, result.exception
        return [str(name) for name in result.result]

    plain = models()
    assert "fct_order_item" in plain and not [m for m in plain if m.startswith("bench_")]
    assert sorted(m for m in models("--vars", "{bench_baselines: true}") if m.startswith("bench_")) == [
        "bench_fct_order_item_microbatch", "bench_fct_order_item_naive", "bench_order_items__by_order_date"]



@pytest.mark.spark
def test_generated_history_and_next_day_keep_the_landing_contract(warehouse, tmp_path: Path):
    """Spark SQL generation: the counts the scale asks for, no version a quarantine rule would
    hold back (the benchmark measures loading, not quarantining), one version per key and update
    time, and a next day with the asked volume, part of it on order dates before the lookback."""
    from harness import bench_data

    spark = warehouse.spark
    scale = bench_data.Scale(items=3000, day_new_items=50, day_corrections=40, old_share=0.25)
    raw = bench_data.generate_history(spark, scale)
    assert raw["orders"] == scale.orders and raw["customers"] >= scale.customers
    lines = spark.sql("select count(*) from (select distinct order_id, order_item_id from raw.order_items)").collect()[0][0]
    assert 0.9 * scale.items < lines < 1.1 * scale.items
    assert raw["order_items"] > lines  # corrections are versions of existing lines
    checks = spark.sql(f"""
        select count_if(updated_at > _loaded_at + interval 60 minutes) as future,
               count_if(updated_at >= timestamp'{bench_data.NEXT_DAY}') as after_history,
               count(*) - count(distinct order_id, order_item_id, updated_at) as same_key_and_time,
               count_if(discount_amount > quantity * unit_price) as discount_above_gross
        from raw.order_items""").collect()[0]
    assert checks.asDict() == {"future": 0, "after_history": 0, "same_key_and_time": 0, "discount_above_gross": 0}
    day = bench_data.land_next_day(spark, scale, tmp_path / "next")
    assert day["landed"]["order_items"] == day["lines_touched"] >= scale.day_corrections + 0.8 * scale.day_new_items
    assert day["landed"]["orders"] == scale.day_new_orders
    assert day["lines_touched_before_lookback"] >= round(scale.day_corrections * scale.old_share)
    assert day["order_dates_touched"] > day["order_dates_touched_before_lookback"] > 1


@pytest.mark.spark
def test_generated_rides_history_and_next_day_keep_the_landing_contract(warehouse, tmp_path: Path):
    """The second example's data at scale: the trips the scale asks for with corrections as
    later versions, drivers with effective-dated versions before their trips, no version a
    quarantine rule would hold back, and a next day of the asked volume whose corrections reach
    trip dates before fct_trip's lookback."""
    from harness import bench_data

    spark = warehouse.spark
    scale = bench_data.Scale(items=3000, day_new_items=50, day_corrections=40, old_share=0.25)
    raw = bench_data.generate_rides_history(spark, scale)
    trips = spark.sql("select count(distinct trip_id) from raw.trips").collect()[0][0]
    assert trips == scale.items and raw["trips"] > trips  # corrections are versions of existing trips
    assert raw["drivers"] > 50  # at least 50 drivers, some with later versions
    checks = spark.sql(f"""
        select count_if(updated_at > _loaded_at + interval 60 minutes) as future,
               count_if(updated_at >= timestamp'{bench_data.NEXT_DAY}') as after_history,
               count(*) - count(distinct trip_id, updated_at) as same_key_and_time,
               count_if(picked_up_at is null or driver_id is null or fare_amount < 0) as quarantined,
               count_if(driver_id not in (select driver_id from raw.drivers)) as unknown_driver
        from raw.trips""").collect()[0]
    assert checks.asDict() == {"future": 0, "after_history": 0, "same_key_and_time": 0, "quarantined": 0,
                               "unknown_driver": 0}
    before = spark.sql("select count(*) from raw.drivers where updated_at >= timestamp'2025-01-01'").collect()[0][0]
    assert before > 0  # commission changes during the year: the type-2 path is exercised
    day = bench_data.land_next_rides_day(spark, scale, tmp_path / "next")
    assert day["landed"]["trips"] == day["events_touched"] == scale.day_new_items + scale.day_corrections
    assert day["events_touched_before_lookback"] >= round(scale.day_corrections * scale.old_share)
    assert day["event_dates_touched"] > day["event_dates_touched_before_lookback"] > 1


@pytest.mark.bench
def test_the_rides_benchmark_runs_end_to_end_at_a_tiny_scale(tmp_path: Path):
    """The second example joins the benchmark: its daily run equals its full refresh and
    rewrites exactly the trip dates its changes touch."""
    out, md = tmp_path / "bench.json", tmp_path / "bench.md"
    subprocess.run([sys.executable, "-m", "harness.bench_incremental", "--domain", "rides", "--scales", "3000",
                    "--day-new-items", "50", "--day-corrections", "60", "--old-share", "0.5", "--phases",
                    "full,daily", "--backfill-days", "0", "--state", str(tmp_path / "state"), "--out", str(out),
                    "--markdown", str(md)], check=True)
    report = json.loads(out.read_text())
    [entry] = report["scales"].values()
    assert report["domain"] == "rides"
    assert entry["phases"]["daily"]["equality"]["fct_trip"]["differing"] == 0
    touched = report["targets"]["changed_partitions_equal_dates_touched"]["3000"]
    assert touched["met"] and touched["order_dates_touched"] == entry["setup"]["next_day"]["event_dates_touched"]
    assert "example domain rides" in md.read_text() and "| 3000 | daily incremental (`dbt run`, --select +fct_trip)" \
        in md.read_text()

@pytest.mark.bench
def test_the_benchmark_runs_end_to_end_at_a_tiny_scale(tmp_path: Path):
    """Every phase in its own process on the same generated data: the product's daily run and
    its backfill equal the full refresh, the daily MERGE rewrites exactly the order dates it
    touched, microbatch misses the corrections older than its lookback, the report is written."""
    out, md = tmp_path / "bench.json", tmp_path / "bench.md"
    subprocess.run([sys.executable, "-m", "harness.bench_incremental", "--scales", "3000", "--day-new-items", "50",
                    "--day-corrections", "60", "--old-share", "0.5", "--backfill-days", "2", "--state",
                    str(tmp_path / "state"), "--out", str(out), "--markdown", str(md)], check=True)
    report = json.loads(out.read_text())
    [entry] = report["scales"].values()
    phases, day = entry["phases"], entry["setup"]["next_day"]
    assert set(phases) >= {"full", "daily", "read_after_daily", "backfill", "maintain", "microbatch", "naive"}
    assert all(e["differing"] == 0 for name in ("daily", "backfill") for e in phases[name]["equality"].values())
    assert phases["backfill"]["status"] == "published"
    assert phases["maintain"]["rollback_after_expiry"] == "rolled_back"
    assert report["targets"]["changed_partitions_equal_dates_touched"]["3000"]["met"]
    # the corrections of lines ordered before the microbatch's lookback are missed, and only those
    assert 0 < phases["microbatch"]["equality"]["fct_order_item"]["differing"] <= day["lines_touched_before_lookback"]
    for name in ("full", "daily", "backfill", "microbatch"):
        assert phases[name]["spark"]["tasks"] > 0 and phases[name]["spark"]["input_bytes"] > 0, name
        assert phases[name]["jvm_peak_mb"] > 100, name
    assert phases["daily"]["spark"]["scans"]["raw.order_items"]["data_files_scanned"] > 0
    assert "| 3000 | daily incremental" in md.read_text()
    # the marts are merge-on-read: the daily MERGE adds delete files and removes no data file
    merged = phases["daily"]["snapshots"]["marts.fct_order_item"]
    assert merged["added_delete_files"] > 0 and merged["deleted_files"] == 0, merged


@pytest.mark.bench
def test_a_kept_warehouse_is_measured_again_without_a_new_setup(tmp_path: Path):
    """--reuse runs the asked phases on the warehouse a --keep-state run kept, from the same
    data: here the daily run again with the marts switched to copy-on-write, still equal to the
    first run's full refresh, and rewriting data files instead of adding delete files."""
    state = tmp_path / "state"
    common = [sys.executable, "-m", "harness.bench_incremental", "--scales", "3000", "--day-new-items", "50",
              "--day-corrections", "60", "--backfill-days", "0", "--state", str(state)]
    subprocess.run([*common, "--phases", "full", "--keep-state", "--out", str(tmp_path / "first.json"),
                    "--markdown", str(tmp_path / "first.md")], check=True)
    setup = json.loads((state / "scale_3000" / "setup.json").read_text())
    subprocess.run([*common, "--phases", "daily", "--reuse", "--marts-merge-mode", "copy-on-write", "--daily-repeats", "2",
                    "--out", str(tmp_path / "again.json"), "--markdown", str(tmp_path / "again.md")], check=True)
    report = json.loads((tmp_path / "again.json").read_text())
    [entry] = report["scales"].values()
    assert entry["setup"]["reused"] and entry["setup"]["next_day"] == setup["next_day"]
    assert set(entry["phases"]) == {"daily", "read_after_daily", "daily#2:daily", "daily#2:read_after_daily"}
    assert all(e["differing"] == 0 for e in entry["phases"]["daily"]["equality"].values())
    # the repeat ran the same day from the same warehouse, with the same merge mode
    assert "equality" not in entry["phases"]["daily#2:daily"]
    for name in ("daily", "daily#2:daily"):
        rewritten = entry["phases"][name]["snapshots"]["marts.fct_order_item"]
        assert rewritten["deleted_files"] > 0 and rewritten["added_delete_files"] == 0, (name, rewritten)
        assert rewritten["added_records"] == entry["phases"]["daily"]["snapshots"]["marts.fct_order_item"]["added_records"]
    assert report["parameters"]["marts_merge_mode"] == "copy-on-write" and report["parameters"]["reused_warehouses"]
