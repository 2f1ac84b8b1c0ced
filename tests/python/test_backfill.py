"""The backfill runner on real Iceberg tables: write-audit-publish, resume, rollback, guardrails.

Each test starts from a warehouse built from four generated days (2025-01-01 .. 01-04), then
lands corrections of three lines of 2025-01-01 updated before the incremental window (a silent
miss the daily run cannot see): a backfill of that range is what repairs them.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import socket
import subprocess
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from domains import SHOP_AGGREGATES, SHOP_FACTS, SHOP_ONLY, stale_aggregates
from helpers import SHOP_MARTS, Checkpoint, Warehouse, item, order
from pipeline import cli, iceberg
from pipeline.backfill import plan_file
from pipeline.backfill.control import Control
from pipeline.backfill.plan import BackfillRefused, PlanError
from pipeline.backfill.runner import Backfill
from sample.generate import GeneratorConfig, generate
from pipeline.land import land

# a module with a build of its own: scripts/test.sh runs it in the second process, beside the
# main one, to even the two processes' time (docs/guides/run-the-tests.md)
pytestmark = pytest.mark.beside

MARTS = tuple(f"marts.{name}" for name in SHOP_MARTS)


class SimulatedCrash(BaseException):
    """Stands for the process dying: not an Exception, so the runner records nothing."""


@pytest.fixture(scope="module")
def built_once(spark, dbt, tmp_path_factory) -> tuple[Warehouse, Checkpoint]:
    tmp_path = tmp_path_factory.mktemp("backfill")
    warehouse = Warehouse.empty(spark, dbt, tmp_path, SHOP_ONLY)
    for folder in generate(GeneratorConfig(days=4, orders_per_day=20, seed=5), tmp_path / "landing"):
        land(warehouse.spark, sorted(folder.iterdir()))
    warehouse.build_all()
    # corrections stamped 2025-01-01 12:00: newer than those lines' current versions, but before
    # the window (watermark ~2025-01-04 23:59 minus 3 days): invisible to the daily run
    lines = warehouse.rows("select order_id, order_item_id, product_id from staging.stg_shop__order_items"
                           " where updated_at < timestamp'2025-01-01 12:00' and not is_deleted order by 1, 2 limit 3")
    assert len(lines) == 3
    warehouse.land(order_items=[item(r.order_id, r.order_item_id, "2025-01-01 12:00", product_id=r.product_id,
                                     quantity=20) for r in lines])
    warehouse.dbt_run(*SHOP_FACTS)  # order lines landed: the dimensions have nothing new
    missed = [r for r in warehouse.dbt.invoke("test", "--select", "fct_order_item", check=False)
              if r.name.startswith("no_unloaded_changes")]
    assert [(r.status, r.failures) for r in missed] == [("warn", 3)]  # listed, awaiting its restatement
    # the second run had nothing to merge into fct_order_item (so it committed nothing): a commit
    # after the first build, rewriting rows as they are, gives the maintenance test a snapshot
    # older than a backfill's base to expire (the tests put the tables back to this one)
    warehouse.spark.sql("update marts.fct_order_item set net_amount = net_amount where order_date = date'2025-01-03'")
    return warehouse, warehouse.checkpoint()


@pytest.fixture
def built(built_once) -> Warehouse:
    """The module's warehouse, put back after the test exactly as the build left it
    (`Warehouse.restore`: the tables a test created are dropped, those it committed to registered
    again from their metadata file, snapshots and branches included; the others are passed by
    without a query: a teardown took 9-16 s when it read every table's refs and snapshot)."""
    warehouse, checkpoint = built_once
    yield warehouse
    warehouse.restore(checkpoint)


def full_refresh_result(wh: Warehouse, table: str) -> list[tuple]:
    """What `dbt run --full-refresh` would write: the live rows of the model's current-state view."""
    view = {"marts.fct_order_item": "staging.int_order_items__current_state",
            "marts.fct_orders": "staging.int_orders__current_state"}[table]
    columns = ", ".join(wh.spark.table(table).columns)
    return sorted(tuple(r) for r in wh.rows(f"select {columns} from {view} where not is_deleted"))


def runner(wh: Warehouse, **kwargs) -> Backfill:
    return Backfill(wh.dbt, wh.spark, Console(file=io.StringIO()), **kwargs)


def snapshots(wh: Warehouse) -> dict:
    return {t: wh.snapshot_id(t) for t in MARTS}


def test_backfill_reproduces_the_full_refresh_publishes_atomically_and_rolls_back_exactly(built: Warehouse):
    before_tables = {t: built.table(t) for t in MARTS}
    watermark = built.watermark("fct_order_item")
    backfill = runner(built)
    run_id = backfill.start(backfill.plan("2025-01-01", "2025-01-03", "int_order_items__current_state", 1),
                         "repair 01-01..01-02")

    control = Control(built.spark)
    [run] = control.runs(run_id)
    # the facts over the current state, and the aggregates over the facts: one run, one publish
    assert run.status == "published" and run.models == [
        "agg_customer_orders", "agg_daily_revenue", "fct_order_item", "fct_orders"]
    windows = control.windows(run_id)
    assert [w.status for w in windows] == ["done", "done"]
    # each window's run records (written by the runner): the branch's snapshot summaries
    records = built.rows("select * from control.run_records where message like :m and model_name like 'fct_%'"
                         " order by window_start, model_name".replace(":m", f"'backfill {run_id} %'"))
    assert [(str(r.window_start), r.model_name) for r in records] == [
        ("2025-01-01", "fct_order_item"), ("2025-01-01", "fct_orders"),
        ("2025-01-02", "fct_order_item"), ("2025-01-02", "fct_orders")]
    for record in records:
        [window] = [w for w in windows if w.window_start == record.window_start]
        stats = json.loads(window.table_stats)[record.relation_name]
        assert (record.added_records, record.deleted_records, record.changed_partitions) == \
            (stats["added"], stats["deleted"], stats["changed_partitions"])
        assert record.watermark_before == record.watermark_after == watermark
    assert sum(r.added_records for r in records) > 0
    # what each window read of its table, on the run's branch (record_scans under backfill vars)
    reads = built.rows("select * from control.run_scans where role = 'target' and branch = :b"
                       " and model_name like 'fct_%' order by window_start, model_name".replace(":b", f"'{run_id}'"))
    assert [(str(r.window_start), str(r.window_end), r.model_name) for r in reads] == [
        ("2025-01-01", "2025-01-02", "fct_order_item"), ("2025-01-01", "2025-01-02", "fct_orders"),
        ("2025-01-02", "2025-01-03", "fct_order_item"), ("2025-01-02", "2025-01-03", "fct_orders")]
    assert all(0 < r.largest_scan_files < r.table_data_files and not r.over_share for r in reads), reads
    assert built.watermark("fct_order_item") == watermark  # a backfill does not move the daily watermark
    assert not built.rows(f"select * from marts.fct_order_item.refs where name = '{run_id}'")  # branch dropped
    statuses = {r.status for r in built.dbt.invoke("test", "--select", "fct_order_item", "fct_orders")
                if r.resource_type == "test"}
    assert statuses == {"pass"}
    assert built.table("marts.fct_order_item") != before_tables["marts.fct_order_item"]
    for table in ("marts.fct_order_item", "marts.fct_orders"):
        assert built.table(table) == full_refresh_result(built, table), table
    assert stale_aggregates(built, SHOP_AGGREGATES) == {}  # restated with the facts, in the same publish

    backfill.rollback(run_id)
    assert {t: built.table(t) for t in MARTS} == before_tables
    assert control.runs(run_id)[0].status == "rolled_back"


def test_status_gives_each_model_the_playbooks_minimal_metrics(built: Warehouse, capsys):
    """Duplicate keys per 1k rows, backfill window runtime p50/p95, watermark lag and the gate's
    mismatch count, per model, in `pipeline status` and as pipeline.metrics computes them."""
    from pipeline import cli
    from pipeline.metrics import model_metrics

    # a backfill of 01-02..01-03, and a correction of a 01-02 line landing while it runs, after
    # its window ran: the gate's reconciliation of fct_order_item fails on that date, on the
    # branch, and nothing is published (01-01's three silent misses lie outside its windows:
    # the gate checks only the dates the backfill wrote)
    [line] = built.rows("select s.order_id, s.order_item_id, s.product_id, s.quantity, s.updated_at"
                        " from staging.stg_shop__order_items as s join marts.fct_order_item as f"
                        " on f.order_id = s.order_id and f.order_item_id = s.order_item_id and f.updated_at = s.updated_at"
                        " where f.order_date = date'2025-01-02' order by 1, 2 limit 1")
    corrected = (line.updated_at + timedelta(hours=1)).strftime("%Y-%m-%d %H:%M")
    landed = []

    def land_during(window) -> None:
        if not landed:
            built.spark.conf.unset("spark.wap.branch")  # the window's models set it on the session
            built.land(order_items=[item(line.order_id, line.order_item_id, corrected, product_id=line.product_id,
                                         quantity=line.quantity + 5)])
            landed.append(window)

    backfill = runner(built)
    backfill.after_window = land_during
    run_id = backfill.start(backfill.plan("2025-01-02", "2025-01-04", "fct_order_item", 1), "metrics test")
    assert backfill.status_of(run_id) == "gate_failed" and landed
    # the gate's failure names the date its reconciliation failed on, inside what the run restated
    message = Control(built.spark).runs(run_id)[0].message
    assert "reconcile_daily_totals_fct_order_item_: fail (1) on 2025-01-02 (in the restated window)" in message, \
        message
    measures = "count(*) as n, sum(quantity) as q, sum(net_amount) as a"
    [mismatched] = built.rows(f"""
        select count(*) as dates from (
            select order_date, {measures} from marts.fct_order_item version as of '{run_id}'
            where order_date >= date'2025-01-02' and order_date < date'2025-01-04' group by order_date) m
        full outer join (
            select order_date, {measures} from staging.int_order_items__current_state where not is_deleted
            and order_date >= date'2025-01-02' and order_date < date'2025-01-04' group by order_date) s
            on m.order_date <=> s.order_date
        where not (m.n <=> s.n and m.q <=> s.q and m.a <=> s.a)""")
    assert mismatched.dates == 1
    # a duplicate key in fct_orders
    built.spark.sql("insert into marts.fct_orders select * from marts.fct_orders where order_id = "
                    "(select min(order_id) from marts.fct_orders)")
    [orders] = built.rows("select count(*) as n from marts.fct_orders")

    def percentile(values: list[float], p: float) -> float:  # linear interpolation, as Spark's
        values = sorted(values)
        at = p * (len(values) - 1)
        low = int(at)
        return values[low] + (values[min(low + 1, len(values) - 1)] - values[low]) * (at - low)

    metrics = {m.model: m for m in model_metrics(built.spark)}
    assert {"fct_order_item", "fct_orders", "dim_customer"} <= set(metrics)
    item_metrics = metrics["fct_order_item"]
    # each window's runtime to the millisecond, as the metrics read it (to the microsecond, a p50
    # of 7.35003 s rounded to 7.4 where the metric's 7.3495 s gave 7.3)
    runtimes = [w.ms / 1000 for w in built.rows(
        "select unix_millis(w.finished_at) - unix_millis(w.started_at) as ms"
        " from control.backfill_window_events w join control.backfill_runs r"
        " on r.run_id = w.run_id where w.status = 'done' and r.models like '%\"fct_order_item\"%'")]
    assert len(runtimes) >= 2 and item_metrics.backfill_windows == len(runtimes)
    assert item_metrics.window_runtime_p50_s == round(percentile(runtimes, 0.5), 1)
    assert item_metrics.window_runtime_p95_s == round(percentile(runtimes, 0.95), 1)
    assert (item_metrics.last_backfill, item_metrics.mismatch_count) == (run_id, mismatched.dates)
    assert item_metrics.duplicate_keys_per_1k == 0.0
    assert metrics["fct_orders"].duplicate_keys_per_1k == round(1000 / orders.n, 3)
    [lag] = built.rows("select unix_timestamp(current_timestamp()) - unix_timestamp(watermark_ts) as s"
                       " from control.etl_watermark where pipeline_name = 'fct_order_item'")
    assert abs(item_metrics.watermark_lag_seconds - lag.s) <= 120

    assert cli.main(["status"]) == 0
    printed = re.sub(r"[^\w\s.\-:]", " ", capsys.readouterr().out)  # the figures, without the table's lines
    assert re.search(rf"fct_orders\s.*?\s{orders.n}\s.*?{re.escape(str(round(1000 / orders.n, 3)))}\s", printed), \
        printed[-3000:]
    assert re.search(rf"fct_order_item\s.*?\s{item_metrics.backfill_windows}\s+{item_metrics.window_runtime_p50_s}\s+"
                     rf"{item_metrics.window_runtime_p95_s}\s+{run_id}\s+{mismatched.dates}\s", printed), printed[-3000:]


def test_failing_gate_publishes_nothing_and_leaves_a_report(built: Warehouse):
    # an order of 2025-01-01 whose new version has no channel: its lines' channel_key points to no
    # dim_channel row, the relationships test fails on the branch
    built.spark.sql("insert into raw.orders select order_id, customer_id, null, status, ordered_at,"
                    " updated_at + interval 1 second, is_deleted, current_timestamp(), 'hand-made'"
                    " from staging.stg_shop__orders where order_id = (select min(order_id) from raw.orders)")
    main_before = snapshots(built)
    backfill = runner(built)
    run_id = backfill.start(backfill.plan("2025-01-01", "2025-01-03", "fct_order_item", 2), "gate test")
    [run] = Control(built.spark).runs(run_id)
    assert run.status == "gate_failed"
    assert "relationships_fct_order_item_channel_key" in run.message, run.message
    assert snapshots(built) == main_before


def test_overlapping_backfill_is_refused_and_a_stale_lock_is_reported(built: Warehouse):
    first = runner(built)
    first.after_window = lambda window: (_ for _ in ()).throw(SimulatedCrash)
    with pytest.raises(SimulatedCrash):
        first.start(first.plan("2025-01-01", "2025-01-03", "fct_order_item", 1), "holds the lock")
    second = runner(built)
    with pytest.raises(BackfillRefused, match="is backfilling agg_daily_revenue, fct_order_item"):
        second.start(second.plan("2025-01-02", "2025-01-04", "fct_order_item", 1), "overlaps")
    stale = runner(built, stale_after=timedelta(0))
    with pytest.raises(BackfillRefused, match="last heartbeat .* --resume bf_.* --abandon"):
        stale.start(stale.plan("2025-01-02", "2025-01-04", "fct_order_item", 1), "overlaps")
    # a model outside the held set is free
    free = runner(built)
    assert free.start(free.plan("2025-01-01", "2025-01-02", "dim_customer", 1), "no overlap")
    [held] = Control(built.spark).active_runs()
    # maintenance leaves a held table alone: a commit to its main would block the publish
    from pipeline.maintain import maintain

    [skipped] = maintain(built.spark, ["marts.fct_order_item"], expire_older_than=None)
    assert skipped.skipped == f"held by running backfill {held.run_id}"
    free.abandon(held.run_id)
    assert Control(built.spark).active_runs() == []


def test_publish_is_refused_when_a_commit_moved_main_meanwhile(built: Warehouse):
    """A commit to main while the run is running (here, after its last window, before its gate)
    would be overwritten by the fast-forward: the publish is refused, main kept as it is."""
    backfill = runner(built)

    def commit_to_main(window) -> None:
        if window.index == 1:
            built.spark.conf.unset("spark.wap.branch")  # the windows' branch: this commit is main's
            built.spark.sql("update marts.fct_order_item set net_amount = net_amount"
                            " where order_date = date'2025-01-04'")

    backfill.after_window = commit_to_main
    with pytest.raises(BackfillRefused, match="moved after the backfill started"):
        backfill.start(backfill.plan("2025-01-01", "2025-01-03", "fct_order_item", 1), "interleave")
    moved = snapshots(built)
    [run] = Control(built.spark).runs()
    assert run.status == "publish_refused" and snapshots(built) == moved


def test_a_backfill_pauses_for_the_fresh_data_and_resumes_on_the_tables_the_daily_run_moved(built: Warehouse):
    """The fresh data's lane: a window that would run into not_during does not start (the run
    pauses at the boundary, its finished window checkpointed, its branches and its models held);
    the daily run commits meanwhile; the resume cuts the moved tables' branches again from main,
    runs the finished window again and publishes: equal to a full refresh, the daily run's
    change kept. A pause asked by the daily job (`pipeline backfill --pause`) is taken at the next
    boundary; one asked before the run started is not its own."""
    from pipeline.backfill.plan import parse_daily_span
    from pipeline.backfill.lane import request_pause

    lane = runner(built)
    lane.not_during = parse_daily_span("05:00-07:30", "--not-during")
    lane.clock = lambda: datetime(2026, 12, 1, 4, 59, 58).astimezone()  # the first window fits, no second
    run_id = lane.start(lane.plan("2025-01-01", "2025-01-03", "fct_order_item", 1), "repair, around the daily run")
    [run] = Control(built.spark).runs(run_id)
    assert run.status == "paused" and "would run into not_during 05:00-07:30" in run.message, run.message
    assert "resume after 07:30" in run.message
    assert [w.status for w in Control(built.spark).windows(run_id)] == ["done", "pending"]
    with pytest.raises(BackfillRefused, match=f"paused .*--resume {run_id}"):  # its models stay held
        other = runner(built)
        other.start(other.plan("2025-01-02", "2025-01-03", "fct_order_item", 1), "overlaps")

    # the daily run takes the warehouse: a new order line lands, the facts' main moves
    built.land(order_items=[item(10**6, 1, "2025-01-04 23:00")])
    built.spark.sql("insert into raw.orders select 1000000, 1, 'web', 'placed', timestamp'2025-01-04 23:00',"
                    " timestamp'2025-01-04 23:00', false, current_timestamp(), 'daily' ")
    based = {t.table_name: t.base_snapshot_id for t in Control(built.spark).tables(run_id)}
    built.dbt_run(*SHOP_FACTS, *(a.name for a in SHOP_AGGREGATES))
    assert built.snapshot_id("marts.fct_order_item") != based["marts.fct_order_item"]

    resumed = runner(built)
    assert resumed.resume(run_id) == run_id
    [run] = Control(built.spark).runs(run_id)
    assert run.status == "published", run.message
    events = built.rows(f"select window_index, status from control.backfill_window_events where run_id = '{run_id}'"
                        " order by recorded_at")
    # window 0: pending, done, pending again (the branch cut again), done; window 1 once
    assert [tuple(e) for e in events if e.window_index == 0] == [(0, "pending"), (0, "done"), (0, "pending"),
                                                                 (0, "done")]
    rebased = {t.table_name: t.base_snapshot_id for t in Control(built.spark).tables(run_id)}
    assert rebased["marts.fct_order_item"] != based["marts.fct_order_item"]  # cut again from the daily run's main
    assert built.table("marts.fct_order_item") == full_refresh_result(built, "marts.fct_order_item")
    assert built.rows("select count(*) from marts.fct_order_item where order_id = 1000000")[0][0] == 1

    # asked to pause by the daily job: taken at the next boundary; a request older than the run ignored
    request_pause("a request nobody took")
    asked = runner(built)
    asked.after_window = lambda window: request_pause("the daily job")
    run_id = asked.start(asked.plan("2025-01-02", "2025-01-04", "fct_order_item", 1), "asked to pause")
    [run] = Control(built.spark).runs(run_id)
    assert run.status == "paused" and "the fresh data asked for the warehouse (the daily job" in run.message
    assert [w.status for w in Control(built.spark).windows(run_id)] == ["done", "pending"]
    asked.abandon(run_id)


def test_a_plan_applied_again_resumes_its_unpublished_run_and_never_runs_a_published_one_twice(
    built: Warehouse, capsys, tmp_path: Path
):
    """A scheduler retries a failed `pipeline apply PLAN` task by running it again: the run the
    plan started is resumed (its failed window alone runs, then the gate and the publish), not
    started a second time; once it is published, applying the plan again runs nothing."""
    plan = tmp_path / "retried.yml"
    assert cli.main(["backfill", "--start", "2025-01-01", "--end", "2025-01-03", "--select", "fct_order_item",
                     "--batch-days", "1", "--reason", "a task retried", "--plan-out", str(plan)]) == 0
    document = plan_file.load(plan)
    first = runner(built)  # the task's first try: its second window fails (its source is away)

    def source_away_for_window_1(window) -> None:
        if window.index == 1:
            built.spark.sql("alter table raw.order_items rename to raw.order_items_away")

    first.before_window = source_away_for_window_1
    try:
        run_id = first.start(first.plan("2025-01-01", "2025-01-03", "fct_order_item", 1), document["reason"],
                             (document["plan_hash"], str(plan), plan.read_text()))
    finally:
        built.spark.sql("alter table raw.order_items_away rename to raw.order_items")
    assert first.status_of(run_id) == "failed"
    before = snapshots(built)

    capsys.readouterr()
    assert cli.main(["apply", str(plan)]) == 0  # the retry
    printed = " ".join(capsys.readouterr().out.split())
    assert f"applied before by {run_id}, failed: resuming it" in printed, printed
    [run] = Control(built.spark).runs()
    assert (run.run_id, run.status) == (run_id, "published")
    ran = built.rows("select window_index, count(*) from control.backfill_window_events"
                     f" where run_id = '{run_id}' and status = 'done' group by 1 order by 1")
    assert [tuple(r) for r in ran] == [(0, 1), (1, 1)], ran  # the first window ran once: not again
    assert built.table("marts.fct_order_item") == full_refresh_result(built, "marts.fct_order_item")

    published = snapshots(built)
    assert published != before
    capsys.readouterr()
    assert cli.main(["apply", str(plan)]) == 0  # retried once more: done already, nothing runs
    assert f"applied already by {run_id}" in " ".join(capsys.readouterr().out.split())
    assert snapshots(built) == published and len(Control(built.spark).runs()) == 1


def test_a_failed_window_is_recorded_the_others_run_and_resume_runs_it_alone(built: Warehouse, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch):
    """A window whose dbt run fails (here its source table is away while it runs) is recorded
    'failed' with the error; the other windows, other dates, run; nothing is gated or published.
    The resume runs the failed window alone, then gates and publishes: equal to a full refresh.
    It runs as a scheduler's retry on another worker would: with a dbt target folder of its own,
    empty (no manifest yet)."""
    before = snapshots(built)
    failing = runner(built)

    def source_away_for_window_1(window) -> None:
        if window.index == 1:
            built.spark.sql("alter table raw.order_items rename to raw.order_items_away")
        elif window.index == 2:
            built.spark.sql("alter table raw.order_items_away rename to raw.order_items")

    failing.before_window = source_away_for_window_1
    run_id = failing.start(failing.plan("2025-01-01", "2025-01-04", "fct_order_item", 1), "one window fails")
    control = Control(built.spark)
    [run] = control.runs(run_id)
    assert run.status == "failed", run.message
    assert run.message.startswith("1 of 3 windows failed (2: 2025-01-02 .. 2025-01-03)"), run.message
    windows = control.windows(run_id)
    assert [w.status for w in windows] == ["done", "failed", "done"]
    assert "fct_order_item: error" in json.loads(windows[1].table_stats)["error"]
    assert snapshots(built) == before  # nothing published
    shown = io.StringIO()
    for table in failing.status(run_id):
        Console(file=shown, width=250).print(table)
    assert re.search(r"2025-01-02 .. 2025-01-03 .* failed .* fct_order_item: error", shown.getvalue()), \
        shown.getvalue()

    ran = []
    monkeypatch.setenv("DBT_TARGET_PATH", str(tmp_path / "another_workers_target"))
    resumed = runner(built)
    resumed.before_window = lambda window: ran.append(window.index)
    assert resumed.retry_failed(run_id) == run_id  # `pipeline backfill --retry-failed RUN_ID`
    assert (tmp_path / "another_workers_target" / "manifest.json").exists()
    [run] = Control(built.spark).runs(run_id)
    assert run.status == "published", run.message
    with pytest.raises(BackfillRefused, match="is published, not failed"):
        runner(built).retry_failed(run_id)
    assert ran == [1]
    assert [w.status for w in Control(built.spark).windows(run_id)] == ["done", "done", "done"]
    assert built.table("marts.fct_order_item") == full_refresh_result(built, "marts.fct_order_item")


def test_parallel_windows_run_at_once_only_the_models_whose_windows_write_their_own_dates(built: Warehouse):
    """`--parallel N` (split_parallel): the facts and the daily revenue, partitioned by their
    event date, run their windows at once; the customers' lifetime figures (a table not
    partitioned by its event date) and the dimensions run theirs one at a time after them. On the embedded target, refused before anything is recorded
    (one dbt invocation at a time in its one process)."""
    backfill = runner(built)
    first, later = backfill.parallel_split(["fct_order_item", "fct_orders", "agg_daily_revenue",
                                            "agg_customer_orders"])
    assert first == ["agg_daily_revenue", "fct_order_item", "fct_orders"]
    assert later == {"agg_customer_orders": "its table is not partitioned by its event date"}
    first, later = backfill.parallel_split(["dim_customer", "fct_orders", "agg_customer_orders"])
    assert (first, sorted(later)) == (["fct_orders"], ["agg_customer_orders", "dim_customer"])  # no fact reads a dimension

    backfill.parallel = 2
    with pytest.raises(PlanError, match="the embedded target runs one dbt invocation at a time"):
        backfill.start(backfill.plan("2025-01-01", "2025-01-03", "fct_order_item", 1), "windows at once")
    assert not iceberg.table_exists(built.spark, "control.backfill_runs")


def test_a_window_refused_by_concurrent_commits_runs_again_then_fails_loudly(built: Warehouse):
    """Iceberg's optimistic concurrency: a window whose MERGE another writer's commit refuses
    runs again, conflict_retries times, then is recorded failed with the conflict named, and
    nothing is published (a resume then runs it alone, as any failed window). The other writer,
    made to win every race: as each of the window's MERGEs into fct_order_item is
    sent, both cores are held by a job that sleeps; once the MERGE has been planned (its first
    job waits), another Iceberg client deletes the 2025-01-01 partition of the run's branch,
    the partition the MERGE rewrites (a metadata-only delete), and the cores are let go. The
    branch is put back to its head before each MERGE is sent."""
    before = snapshots(built)
    context = built.spark.sparkContext
    heads: dict[str, int] = {}  # the run's branch -> its head before any other writer's commit
    refused: list[str] = []

    def branch_head(branch: str) -> int:
        return built.rows(f"select snapshot_id from marts.fct_order_item.refs where name = '{branch}'")[0].snapshot_id

    def put_back(branch: str) -> None:
        if branch_head(branch) != heads[branch]:
            built.spark.sql(f"alter table marts.fct_order_item replace branch `{branch}` as of version {heads[branch]}")

    def hold_the_cores(group: str) -> None:
        context.setJobGroup(group, "both cores, while another writer commits", True)
        try:  # 20 s at most: long enough for the MERGE to be planned and the delete to commit
            context.parallelize(range(2), 2).foreach(lambda _: time.sleep(20))
        except Exception:  # noqa: BLE001 - cancelled, as it should be
            pass

    def delete_the_partition_once_the_merge_is_planned(branch: str, merge: str, held: str) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not context.statusTracker().getJobIdsForGroup(merge):
            time.sleep(0.02)  # until the MERGE's first job: its scan of the branch planned, its snapshot taken
        # whole files of one partition: Iceberg deletes them from the metadata, no task to run; on
        # the branch the window set (spark.wap.branch: a write may not name the branch too)
        assert built.spark.conf.get("spark.wap.branch") == branch
        built.spark.sql("delete from marts.fct_order_item where order_date = date'2025-01-01'")
        refused.append(branch)
        context.cancelJobGroup(held)

    def on_event(event) -> None:
        if event.info.name != "SQLQuery" or "merge into marts.fct_order_item " not in event.data.sql:
            return
        [branch] = [r.name for r in built.rows("select name from marts.fct_order_item.refs where name like 'bf_%'")]
        heads.setdefault(branch, branch_head(branch))
        put_back(branch)
        held = f"held-{time.monotonic_ns()}"
        threading.Thread(target=hold_the_cores, args=(held,), daemon=True).start()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not context.statusTracker().getJobIdsForGroup(held):
            time.sleep(0.01)  # its job submitted: its tasks take both slots before the MERGE's come
        merge = f"merge-{time.monotonic_ns()}"
        context.setJobGroup(merge, "the window's MERGE")  # this thread's: dbt sends the MERGE from it
        threading.Thread(target=delete_the_partition_once_the_merge_is_planned, args=(branch, merge, held),
                         daemon=True).start()

    shown = io.StringIO()
    contended = Backfill(built.dbt, built.spark, Console(file=shown, width=250))
    contended.conflict_retries = 1
    with built.dbt.listening(on_event):
        run_id = contended.start(contended.plan("2025-01-01", "2025-01-02", "fct_order_item", 1), "contended")
    assert len(refused) == 2, refused  # the window's run and its one retry
    [run] = Control(built.spark).runs(run_id)
    assert run.status == "failed", (run.message, shown.getvalue())
    [window] = Control(built.spark).windows(run_id)
    error = json.loads(window.table_stats)["error"]
    assert error.startswith("refused by concurrent commits (") and " 2 times, retried 1 times" in error, error
    assert "refused by a concurrent commit" in shown.getvalue() and "running it again (1 of 1)" in " ".join(
        shown.getvalue().split()), shown.getvalue()
    assert snapshots(built) == before  # nothing published
    # what `--resume` then does with a failed window (runs it alone, gates, publishes):
    # test_a_failed_window_is_recorded_the_others_run_and_resume_runs_it_alone


def test_dry_run_writes_nothing(built: Warehouse):
    before = snapshots(built)
    assert not iceberg.table_exists(built.spark, "control.backfill_runs")
    backfill = runner(built)
    plan = backfill.plan("2025-01-01", "2025-01-05", None, 2)
    out = io.StringIO()
    Console(file=out, width=200).print(backfill.dry_run(plan))
    text = out.getvalue()
    assert "2 windows" in text and "fct_order_item" in text and "dim_date" in text
    assert snapshots(built) == before
    assert not iceberg.table_exists(built.spark, "control.backfill_runs")


def test_a_reviewed_plan_is_applied_exactly_and_a_stale_one_is_refused(built: Warehouse, capsys, tmp_path: Path):
    """`pipeline backfill --plan-out` writes a plan and runs nothing; `pipeline apply` refuses it
    once the code in scope differs from what it was planned on (a plan made on another version of
    fct_order_item: same fields, re-sealed), runs it when only the data moved (a daily run's
    commit: a note), and the run records the plan; `status RUN_ID --plan-out` replays the run."""
    plan = tmp_path / "repair.yml"
    before = snapshots(built)
    assert cli.main(["backfill", "--start", "2025-01-01", "--end", "2025-01-02", "--select", "fct_order_item",
                     "--reason", "repair the corrections of 2025-01-01", "--plan-out", str(plan)]) == 0
    assert snapshots(built) == before and not iceberg.table_exists(built.spark, "control.backfill_runs")
    document = plan_file.load(plan)
    assert document["kind"] == "backfill" and document["scope"]["windows"] == [
        {"start": "2025-01-01", "end": "2025-01-02"}]
    assert document["scope"]["models"] == ["agg_daily_revenue", "fct_order_item"]
    assert {"fct_order_item", "stg_shop__order_items", "int_order_items__current_state"} <= set(
        document["code"]["models"])
    assert any(g.startswith("reconcile_daily_totals_fct_order_item") for g in document["gates"])
    [lines] = [w for w in document["estimate"]["windows"] if w["model"] == "fct_order_item"]
    assert lines["live_rows"] == built.rows("select count(*) from marts.fct_order_item"
                                            " where order_date = date'2025-01-01'")[0][0] > 0
    assert document["data"]["snapshots"]["marts.fct_order_item"] == before["marts.fct_order_item"]

    # planned on another version of the model: refused, naming it; --replan writes the plan of now
    other = tmp_path / "other.yml"
    plan_file.dump({**document, "code": {**document["code"], "models": {
        **document["code"]["models"], "fct_order_item": "0" * 64}}}, other)
    capsys.readouterr()
    assert cli.main(["apply", str(other)]) == 2
    refused = " ".join(capsys.readouterr().out.split())
    assert "is stale" in refused and "code.models.fct_order_item: its SQL or its configuration changed" in refused, \
        refused
    assert snapshots(built) == before and not iceberg.table_exists(built.spark, "control.backfill_runs")
    assert cli.main(["apply", "--replan", str(other)]) == 0
    assert plan_file.load(other)["code"] == plan_file.load(plan)["code"]
    capsys.readouterr()
    assert cli.main(["apply", "--replan", str(plan)]) == 0  # not stale: said so, nothing run
    assert f"{plan}: unchanged" in capsys.readouterr().out
    assert snapshots(built) == before and not iceberg.table_exists(built.spark, "control.backfill_runs")

    # the data moved, the scope did not: applied, with a note; the run records the plan
    built.spark.sql("update marts.fct_order_item set net_amount = net_amount where order_date = date'2025-01-02'")
    capsys.readouterr()
    assert cli.main(["apply", str(plan)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "note: tables committed to since planning: marts.fct_order_item" in printed, printed
    [run] = Control(built.spark).runs()
    assert run.status == "published" and run.models == document["scope"]["models"]
    assert [(str(w.window_start), str(w.window_end)) for w in Control(built.spark).windows(run.run_id)] == [
        ("2025-01-01", "2025-01-02")]
    recorded = Control(built.spark).plan(run.run_id)
    assert (recorded.plan_hash, recorded.plan_file, recorded.plan) == (document["plan_hash"], str(plan),
                                                                       plan.read_text())
    for table in ("marts.fct_order_item",):
        assert built.table(table) == full_refresh_result(built, table)
    shown = Console(width=400, record=True, file=io.StringIO())
    for table in runner(built).status(run.run_id):
        shown.print(table)
    assert f"{plan} (plan_hash {document['plan_hash']})" in shown.export_text()

    # its version note: why, from which plan, the rows each table gained and lost; then undone
    [stats] = [json.loads(w.table_stats) for w in Control(built.spark).windows(run.run_id)]
    capsys.readouterr()
    assert cli.main(["changelog"]) == 0
    note = capsys.readouterr().out
    assert f"{run.run_id} published" in note and "repair the corrections of 2025-01-01" in note, note
    assert f"plan {plan} (plan_hash {document['plan_hash'][:12]})" in note, note
    fact = stats["marts.fct_order_item"]
    assert f"marts.fct_order_item +{fact['added']}/-{fact['deleted']}" in note and fact["added"] > 0, note
    runner(built).rollback(run.run_id)
    assert cli.main(["changelog"]) == 0
    assert f"{run.run_id} rolled_back" in capsys.readouterr().out

    replay = tmp_path / "replay.yml"
    assert cli.main(["status", run.run_id, "--plan-out", str(replay)]) == 0
    replayed = plan_file.load(replay)
    assert replayed["parameters"]["windows"] == [{"start": "2025-01-01", "end": "2025-01-02"}]
    assert replayed["scope"]["models"] == document["scope"]["models"]
    assert replayed["reason"] == f"replay of {run.run_id}: repair the corrections of 2025-01-01"


def test_a_publish_tests_the_models_downstream_names_the_stale_ones_and_the_consumers_to_refresh(
        built: Warehouse, capsys, monkeypatch):
    """After a publish, what reads the published tables is checked and recorded: a plain table
    built from fct_orders before the backfill is stale (named with the command that refreshes
    it), the data tests of the downstream models run on main (its reconciliation fails while it
    is stale: exit 4, the publish stands), the dashboard reading the facts is named as a consumer
    to refresh; status and changelog show it. With --rebuild-downstream the table is built again
    first and its test passes; a rollback is checked the same way."""
    monkeypatch.setenv("BACKFILL_SAFE_DOWNSTREAM_MODELS", "true")  # reaches the runner's parse too
    built.dbt.invoke("run", "--select", "plain_downstream_orders")  # dropped after the test (built)
    assert built.table("marts.plain_downstream_orders") == sorted(
        built.rows("select order_id, order_date, net_amount from marts.fct_orders"))
    repair = ["backfill", "--start", "2025-01-01", "--end", "2025-01-02", "--select", "fct_orders",
              "--reason", "repair the corrections of 2025-01-01"]
    capsys.readouterr()
    assert cli.main(repair) == 4
    printed = " ".join(capsys.readouterr().out.split())
    [first] = [r for r in Control(built.spark).runs() if r.status == "published"]
    assert first.models == ["agg_customer_orders", "fct_orders"]
    recorded = {(r.resource_type, r.name): r for r in Control(built.spark).downstream(first.run_id)}
    assert {r.event for r in recorded.values()} == {"published"}
    dashboard = recorded[("exposure", "daily_revenue_dashboard")]
    assert dashboard.status == "to refresh" and "Finance analytics" in dashboard.detail
    table = recorded[("model", "plain_downstream_orders")]
    assert (table.materialized, table.status, table.detail) == (
        "table", "stale", "dbt run --select plain_downstream_orders")
    [reconciled] = [r for (kind, name), r in recorded.items() if kind == "test"
                    and name.startswith("reconcile_daily_totals_plain_downstream_orders")]
    assert (reconciled.model_name, reconciled.status, reconciled.failures) == ("plain_downstream_orders", "fail", 1)
    assert all(r.status == "pass" for (kind, _), r in recorded.items() if kind == "test" and r is not reconciled)
    assert "consumers to refresh (exposures): daily_revenue_dashboard (dashboard, Finance analytics" in printed
    assert "stale plain_downstream_orders (table): dbt run --select plain_downstream_orders" in printed, printed
    assert "1 failed" in printed and reconciled.name in printed, printed
    assert runner(built).downstream_failed(first.run_id)
    capsys.readouterr()
    assert cli.main(["changelog"]) == 0
    note = " ".join(capsys.readouterr().out.split())
    assert "consumers to refresh: daily_revenue_dashboard" in note and \
        "downstream models: plain_downstream_orders stale" in note and f"1 failed; {reconciled.name} fail (1)" in note, note
    shown = Console(width=400, record=True, file=io.StringIO())
    for part in runner(built).status(first.run_id):
        shown.print(part)
    status = shown.export_text()
    assert "plain_downstream_orders" in status and "to refresh" in status, status

    # the same range again, rebuilding what is stale first: its test passes, exit 0
    assert cli.main([*repair, "--rebuild-downstream"]) == 0
    [second] = [r for r in Control(built.spark).runs() if r.status == "published" and r.run_id != first.run_id]
    again = {(r.resource_type, r.name): r for r in Control(built.spark).downstream(second.run_id)}
    assert again[("model", "plain_downstream_orders")].status == "rebuilt"
    assert all(r.status == "pass" for (kind, _), r in again.items() if kind == "test") and any(
        kind == "test" and name.startswith("reconcile_daily_totals_plain_downstream_orders") for kind, name in again)
    assert built.table("marts.plain_downstream_orders") == sorted(
        built.rows("select order_id, order_date, net_amount from marts.fct_orders"))
    # a rollback is an event downstream too: checked and recorded the same way
    assert cli.main(["rollback", second.run_id]) == 0
    assert {r.event for r in Control(built.spark).downstream(second.run_id)} == {"published", "rolled_back"}
    assert not runner(built).downstream_failed(second.run_id, "rolled_back")


def test_dry_run_counts_the_live_rows_a_merge_on_read_merge_left_not_the_records_of_its_files(built: Warehouse):
    """The marts MERGE in merge-on-read mode: the rows a MERGE deletes or updates stay in their
    data files, marked by position delete files, so Iceberg's record_count counts rows no reader
    sees. The dry run's rows are the window's live rows, as `count(*)` finds them."""
    built.spark.sql("""
        merge into marts.fct_order_item as t
        using (
            select order_item_sk, row_number() over (order by order_item_sk) as n
            from (select order_item_sk from marts.fct_order_item where order_date = date'2025-01-02'
                  order by order_item_sk limit 2) as picked
        ) as s
        on t.order_item_sk = s.order_item_sk
        when matched and s.n = 1 then delete
        when matched then update set quantity = t.quantity + 1""")
    [deletes] = built.rows("select count(*) as n from marts.fct_order_item.delete_files"
                           " where partition.order_date = date'2025-01-02'")
    assert deletes.n > 0  # merge-on-read: the MERGE wrote position deletes
    backfill = runner(built)
    plan = backfill.plan("2025-01-01", "2025-01-05", "fct_order_item", 2)
    dry = backfill.dry_run(plan)
    cells = {column.header: list(column.cells) for column in dry.columns}
    rows_column = next(header for header in cells if "rows" in header)
    shown = {(w.split(":")[0], m): int(n.replace(",", "")) for w, m, n in zip(cells["window"], cells["model"],
                                                                              cells[rows_column])}
    window = "order_date >= date'2025-01-01' and order_date < date'2025-01-03'"
    [live] = built.rows(f"select count(*) as n from marts.fct_order_item where {window}")
    [records] = built.rows("select sum(record_count) as n from marts.fct_order_item.partitions"
                           f" where {window.replace('order_date', 'partition.order_date')}")
    assert shown[("0", "fct_order_item")] == live.n != records.n
    # the raw sources are appended to only: their records are their rows, and called records
    sources = sorted({s for m in plan.models for s in m.sources})
    raw = sum(built.rows(f"select count(*) as n from {s}")[0].n for s in sources)
    assert raw == sum(built.rows(f"select coalesce(sum(record_count), 0) as n from {s}.partitions")[0].n
                      for s in sources)
    assert f"all {raw} records of their sources" in dry.caption


def test_maintenance_compacts_keeps_rollback_snapshots_and_rollback_passes_compactions(built: Warehouse):
    from pipeline.maintain import maintain

    before_tables = {t: built.table(t) for t in MARTS}
    backfill = runner(built)
    run_id = backfill.start(backfill.plan("2025-01-01", "2025-01-02", "int_order_items__current_state", 1),
                            "maintenance after a backfill")
    [table] = [t for t in Control(built.spark).tables(run_id) if t.table_name == "marts.fct_order_item"]

    # compaction of the landing tables: fewer files, the same rows
    raw_before = {t: built.table(t) for t in ("raw.orders", "raw.order_items")}
    compacted = {r.table: r for r in maintain(built.spark, ["raw.orders", "raw.order_items"], expire_older_than=None)}
    for name, rows in raw_before.items():
        assert compacted[name].rewritten_files > 0 and compacted[name].files_after < compacted[name].files_before
        assert built.table(name) == rows

    # the facts MERGE in merge-on-read mode: the backfill's corrections left delete files that
    # readers apply; compaction rewrites the data files they point at and drops them, same rows
    fact_rows = built.table("marts.fct_order_item")
    [applied] = maintain(built.spark, ["marts.fct_order_item"], expire_older_than=None)
    assert applied.delete_files_before > 0 and applied.delete_files_after == 0, applied
    assert built.table("marts.fct_order_item") == fact_rows
    # a compaction of a published table (a `replace` commit) does not end its rollback...
    built.spark.sql("call spark_catalog.system.rewrite_data_files(table => 'marts.fct_order_item',"
                    " options => map('rewrite-all', 'true'))")
    compactions = iceberg.operations_since(built.spark, "marts.fct_order_item", table.published_snapshot_id)
    assert compactions and set(compactions) == {"replace"}, compactions
    # ...and expiring everything older than an hour from now keeps the snapshot rollback restores
    expired = {r.table: r for r in maintain(built.spark, ["marts.fct_order_item"], compact=False,
                                            expire_older_than=timedelta(0), retain_last=1,
                                            now=datetime.now(UTC) + timedelta(hours=1))}
    assert expired["marts.fct_order_item"].kept_for_rollback == run_id
    assert expired["marts.fct_order_item"].expired_snapshots > 0  # the first build's snapshot went
    assert built.rows(f"select 1 from marts.fct_order_item.snapshots where snapshot_id = {table.pre_publish_snapshot_id}")

    backfill.rollback(run_id)
    assert {t: built.table(t) for t in MARTS} == before_tables


def _exited_pid() -> int:
    """The pid of a process of this host that has ended."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_restate_lists_rows_late_beyond_the_window_and_backfills_only_their_dates(built: Warehouse, capsys,
                                                                                  tmp_path: Path):
    # the three corrections of 2025-01-01 lines stamped before the window (module fixture) are
    # listed with their dates: the lines in fct_order_item, their orders' totals in fct_orders
    late = built.rows("select model_name, problem, restate_date from audit.audit_unreflected_changes")
    assert sorted((r.model_name, r.problem) for r in late)[:3] == [("fct_order_item", "stale")] * 3
    assert {r.model_name for r in late} == {"fct_order_item", "fct_orders"}
    assert {str(r.restate_date) for r in late} == {"2025-01-01"}

    def partitions(table: str) -> dict[str, tuple[frozenset, int | None]]:
        """Per order date: its data files, and the snapshot that added the newest of them."""
        files = built.files_by_partition(table)
        added = {r.file_path: r.snapshot_id for r in built.rows(f"select data_file.file_path, snapshot_id"
                                                                f" from {table}.entries where status <> 2")}
        return {str(p[0]): (frozenset(f), max(added.get(x) or 0 for x in f)) for p, f in files.items()}

    before = {t: partitions(t) for t in ("marts.fct_order_item", "marts.fct_orders")}
    # the audit rows of restatements that did not end: one killed (its process is gone), one
    # another restatement of this host holds (running), one held two days ago on another host
    gone = _exited_pid()
    now = datetime.now(UTC).isoformat(timespec="seconds")
    for token, owner, at in (("0000dead", f"{socket.gethostname()}:{gone}", now),
                             ("00000a1e", f"{socket.gethostname()}:{os.getppid()}", now),
                             ("000000f0", "elsewhere:1", (datetime.now(UTC) - timedelta(days=2)).isoformat())):
        built.spark.sql(f"create table control.restate_audit_{token} using iceberg tblproperties"
                        f" ('backfill_safe.held_by' = '{owner}', 'backfill_safe.held_at' = '{at}')"
                        " as select 1 as unique_key")
    backfill = runner(built)
    plan = backfill.restate_plan(None, 7)
    assert [(str(w.start), str(w.end)) for w in plan.windows] == [("2025-01-01", "2025-01-02")]
    alive = sorted(r.tableName for r in built.rows("show tables in control like 'restate_audit_0000*'"))
    assert alive == ["restate_audit_00000a1e"], alive  # the killed one's and the old one's dropped
    built.spark.sql("drop table control.restate_audit_00000a1e purge")
    # the audit read once, held for the keys and the cost below (each read recomputes every
    # declared model's current state), and dropped when a restatement starts or finds nothing
    def held_audits() -> list[str]:
        return sorted(r.tableName for r in built.rows("show tables in control like 'restate_audit_*'"))

    [held_audit] = held_audits()
    assert backfill.restatement.held_audit == f"control.{held_audit}"
    # the facts the audit lists, and the aggregates over them
    assert sorted(m.name for m in plan.models) == [
        "agg_customer_orders", "agg_daily_revenue", "fct_order_item", "fct_orders"]

    # the cost of the missed window, before the restatement: each date's rows and declared
    # measures as the table holds them, and as the restatement will leave them
    def figures(model: str, event_date: str, names: tuple[str, ...], column: str = "order_date") -> tuple:
        """A date's figures; the whole table's for a model with no event date (event_date 'None')."""
        measures = "".join(f", coalesce(sum({m}), 0)" for m in names[1:])
        where = "" if event_date == "None" else f" where {column} = date'{event_date}'"
        return tuple(built.rows(f"select count(*){measures} from marts.{model}{where}")[0])

    impacts = backfill.restate_impact(None)
    late = [i for i in impacts if not i.via]
    assert [(i.model, str(i.event_date)) for i in late] == [("fct_order_item", "2025-01-01"),
                                                            ("fct_orders", "2025-01-01")]
    lines, orders = late
    assert (lines.keys, lines.figures) == (3, ("rows", "quantity", "net_amount"))
    assert orders.figures == ("rows", "total_quantity", "net_amount")
    held = {i.model: figures(i.model, "2025-01-01", i.figures) for i in late}
    for impact in late:
        assert impact.held == held[impact.model], impact
        assert impact.restated[1:] != impact.held[1:], impact  # the corrections move the date's totals
    # the aggregates the restatement reaches through the facts: the revenue of the late date, the
    # lifetime figures of the late orders' customers (no event date: the whole table's); as held (their
    # rows are recomputed from the restated facts: only the restatement knows them)
    reached = {r.model.name: r for r in backfill.restate_reached(None, sample=10_000)}
    assert {name: r.via for name, r in reached.items()} == {
        "agg_customer_orders": ("fct_orders",), "agg_daily_revenue": ("fct_order_item",)}
    downstream = [i for i in impacts if i.via]
    assert sorted((i.model, str(i.event_date)) for i in downstream) == [
        ("agg_customer_orders", "None"), ("agg_daily_revenue", "2025-01-01")]
    for impact in downstream:
        assert impact.restated is None and impact.via == reached[impact.model].via, impact
        assert impact.held == figures(impact.model, str(impact.event_date), impact.figures,
                                      "order_date")
    assert sum(i.keys for i in downstream if i.model == "agg_customer_orders") == reached["agg_customer_orders"].keys
    revenue = next(i for i in downstream if i.model == "agg_daily_revenue")
    aggregates_before = {a.name: {r[0]: r for r in built.table(a.relation)} for a in SHOP_AGGREGATES}

    # `pipeline restate` as a reviewed plan: the keys and the cost per date printed and written
    # to a plan file, nothing run, no table left behind (a dry run prints the same)
    plan = tmp_path / "restate.yml"
    capsys.readouterr()
    assert cli.main(["restate", "--batch-days", "7", "--reason", "late corrections of 2025-01-01",
                     "--plan-out", str(plan)]) == 0
    printed = capsys.readouterr().out
    assert "the cost of the missed window" in printed
    assert "reached through fct_order_item" in printed and "reached through fct_orders" in printed, printed
    assert str(lines.restated[2]) in printed and str(orders.restated[2]) in printed, printed  # announced
    assert held_audits() == [held_audit]
    planned = plan_file.load(plan)
    late_keys = {model: sorted(r.unique_key for r in built.rows(  # as the test's own held audit has them
        f"select distinct unique_key from {backfill.restatement.held_audit} where model_name = '{model}'"))
        for model in ("fct_order_item", "fct_orders")}
    assert planned["kind"] == "restate" and planned["scope"]["late_keys"] == [
        {"model": "fct_order_item", "problem": "stale", "keys": 3, "dates": "2025-01-01 .. 2025-01-01",
         "keys_sha256": hashlib.sha256(",".join(late_keys["fct_order_item"]).encode()).hexdigest()},
        {"model": "fct_orders", "problem": "stale", "keys": orders.keys, "dates": "2025-01-01 .. 2025-01-01",
         "keys_sha256": hashlib.sha256(",".join(late_keys["fct_orders"]).encode()).hexdigest()}]
    assert {(c["model"], c["date"]) for c in planned["estimate"]["missed_window_cost"]} >= {
        ("fct_order_item", "2025-01-01"), ("fct_orders", "2025-01-01")}
    # a fourth late correction lands after the review: the plan no longer covers the late keys,
    # refused with the difference; withdrawn (the raw table put back), the plan applies
    raw = built.snapshot_id("raw.order_items")
    line = built.rows("select order_id, order_item_id, product_id from staging.stg_shop__order_items"
                      " where updated_at < timestamp'2025-01-01 12:00' and not is_deleted order by 1, 2 limit 4")[3]
    built.land(order_items=[item(line.order_id, line.order_item_id, "2025-01-01 13:00", product_id=line.product_id,
                                 quantity=30)])
    assert cli.main(["apply", str(plan)]) == 2
    refused = " ".join(capsys.readouterr().out.split())
    assert "is stale" in refused and "scope.late_keys: planned only: {model: fct_order_item, problem: stale," \
        " keys: 3" in refused, refused
    assert not iceberg.table_exists(built.spark, "control.backfill_runs")  # refused before any run began
    assert held_audits() == [held_audit]  # the refused apply's own held audit dropped
    built.spark.sql(f"call spark_catalog.system.set_current_snapshot('raw.order_items', {raw})")
    assert cli.main(["apply", str(plan)]) == 0
    assert held_audits() == [held_audit]  # the command's own, dropped as its restatement started
    [(run_id, status)] = [(r.run_id, r.status) for r in built.rows(
        "select run_id, status from control.backfill_runs where reason = 'late corrections of 2025-01-01'")]
    assert status == "published" and Control(built.spark).plan(run_id).plan_hash == planned["plan_hash"]
    for impact in late:  # what the dry run said the date would hold, it holds
        assert figures(impact.model, "2025-01-01", impact.figures) == impact.restated, impact
    # and the run keeps the cost per date: before, announced, after (pipeline status RUN_ID)
    recorded = {(r.model_name, str(r.event_date), r.figure): (r.late_keys, r.before_value, r.announced_value,
                                                              r.after_value)
                for r in Control(built.spark).date_figures(run_id)}
    assert {k: v for k, v in recorded.items() if k[0].startswith("fct_")} == {
        (i.model, str(i.event_date), name): (i.keys, before, after, after)
        for i in (lines, orders) for name, before, after in zip(i.figures, i.held, i.restated)}
    # the aggregates: as held before, nothing announced, as the restatement left them
    assert {k: v for k, v in recorded.items() if k[0].startswith("agg_")} == {
        (i.model, str(i.event_date), name): (i.keys, before, None, now)
        for i in downstream for name, before, now in zip(i.figures, i.held, figures(
            i.model, str(i.event_date), i.figures,
            "order_date"))}
    assert figures("agg_daily_revenue", "2025-01-01", revenue.figures) != revenue.held  # the corrections reached it
    # every aggregate row the restatement changed is among the keys the dry run listed
    for aggregate in SHOP_AGGREGATES:
        now = {r[0]: r for r in built.table(aggregate.relation)}
        changed = {k for k in now.keys() | aggregates_before[aggregate.name].keys()
                   if now.get(k) != aggregates_before[aggregate.name].get(k)}
        assert changed and changed <= set(reached[aggregate.name].sample), (aggregate.name, changed)
    shown = Console(width=300, record=True, file=io.StringIO())
    for table in backfill.status(run_id):
        shown.print(table)
    assert "the cost of the missed window" in shown.export_text()
    capsys.readouterr()
    assert cli.main(["changelog"]) == 0  # the version note: each date's figures before -> after
    note = capsys.readouterr().out
    assert f"{run_id} published" in note and f"plan {plan} (plan_hash {planned['plan_hash'][:12]})" in note, note
    assert f"fct_order_item 2025-01-01 quantity: {lines.held[1]} -> {lines.restated[1]}" in note, note

    for table in ("marts.fct_order_item", "marts.fct_orders"):
        assert built.table(table) == full_refresh_result(built, table), table
        after = partitions(table)
        assert after["2025-01-01"] != before[table]["2025-01-01"], table  # rewritten
        untouched = {d: s for d, s in before[table].items() if d != "2025-01-01"}
        assert len(untouched) >= 3 and {d: after[d] for d in untouched} == untouched, table  # same files, same snapshots
    # the aggregates over the facts restated in the same publish
    assert stale_aggregates(built, SHOP_AGGREGATES) == {}
    assert built.rows("select * from audit.audit_unreflected_changes") == []
    assert backfill.restate_plan(None, 7) is None  # nothing left to restate
    assert held_audits() == []
    failing = [r for r in built.dbt.invoke("test", "--select", "fct_order_item", "fct_orders", check=False)
               if r.name.startswith("no_unloaded_changes")]
    assert [r.status for r in failing] == ["pass", "pass"]



def test_a_late_row_within_the_restatement_window_is_restated_on_schedule_and_one_beyond_it_waits_for_sign_off(
        built: Warehouse, capsys):
    """The late-data policy (var restatement_window_days, 90 days here): the scheduled deep
    restatement (`pipeline restate`) restates the late rows within their window, under a cost
    ceiling it refuses to exceed without an approval; a row older than the window is held,
    listed by `pipeline status`, until a sign-off of exactly the rows reviewed; then the next
    restatement restates it and the sign-off is spent."""
    # besides the three late corrections of 2025-01-01 (module fixture): an order of 2024-09-01
    # landed now, stamped then: 125 days before the watermark's date, beyond the 90-day window
    [known] = built.rows("select o.customer_id, i.product_id from staging.stg_shop__orders as o"
                         " join staging.stg_shop__order_items as i on i.order_id = o.order_id limit 1")
    built.land(orders=[order(9001, "2024-09-01 10:00", customer_id=known.customer_id)],
               order_items=[item(9001, 1, "2024-09-01 10:00", product_id=known.product_id, quantity=4)])
    beyond = {(r.model_name, str(r.restate_date), r.restatement_window_days, r.beyond_restatement_window)
              for r in built.rows("select * from audit.audit_unreflected_changes")}
    assert beyond == {("fct_order_item", "2025-01-01", 90, False), ("fct_orders", "2025-01-01", 90, False),
                      ("fct_order_item", "2024-09-01", 90, True), ("fct_orders", "2024-09-01", 90, True)}

    # the cost ceiling: the 2025-01-01 restatement rewrites that date's partition of each fact
    # (and the aggregates'): over a ceiling of 1, refused before anything runs
    assert cli.main(["restate", "--reason", "nightly deep restatement", "--max-partitions", "1"]) == 2
    refused = " ".join(capsys.readouterr().out.split())
    assert "over the cost ceiling of 1" in refused and "--approved-by" in refused, refused
    assert not iceberg.table_exists(built.spark, "control.backfill_runs") or not built.rows(
        "select * from control.backfill_runs")
    # approved: it restates the rows within the window and holds the one beyond (exit 3)
    assert cli.main(["restate", "--reason", "nightly deep restatement", "--max-partitions", "1",
                     "--approved-by", "Ana Lima"]) == 3
    printed = " ".join(capsys.readouterr().out.split())
    assert "pending sign-off" in printed and "9001" in printed, printed
    [run] = built.rows("select run_id, status, start_date, reason from control.backfill_runs")
    assert (run.status, str(run.start_date)) == ("published", "2025-01-01"), run
    assert "approved by Ana Lima" in run.reason, run.reason
    # its gate left out the held date (no_unloaded_changes and reconcile_daily_totals fail there
    # until the sign-off): what the late-data policy does not restate is not this run's to fix
    assert [str(d) for d in Control(built.spark).gate_exclusions(run.run_id)] == ["2024-09-01"]
    assert built.rows("select count(*) as n from marts.fct_order_item where order_id = 9001")[0].n == 0
    assert {(r.model_name, r.beyond_restatement_window) for r in built.rows(
        "select * from audit.audit_unreflected_changes")} == {("fct_order_item", True), ("fct_orders", True)}
    # pending until signed off: what `pipeline status` prints after its runs (the status page's
    # alerts read the same, late_by_model)
    shown = Console(width=300, record=True, file=io.StringIO())
    for table in runner(built).late_policy_tables():
        shown.print(table)
    lines = shown.export_text().splitlines()
    for model in ("fct_order_item", "fct_orders"):  # to restate, dates, held, held dates, window
        [line] = [line for line in lines if line.strip("│ ").startswith(model + " ")]
        assert [c.strip() for c in line.split("│")[2:7]] == ["0", "-", "1", "2024-09-01", "90"], line

    # the review prints the keys, the impact per date and the hash of the rows held
    assert cli.main(["signoff"]) == 0
    review = capsys.readouterr().out
    [approve] = re.findall(r"--approve\s+([0-9a-f]{16})", review)
    assert "2024-09-01" in review and "held beyond their restatement window" in " ".join(review.split()), review
    # a sign-off must name the rows shown: another hash is refused, and so is one without a name
    assert cli.main(["signoff", "--approve", "0123456789abcdef", "--by", "Ana Lima", "--reason", "x"]) == 2
    assert "not the rows approved" in " ".join(capsys.readouterr().out.split())
    assert cli.main(["signoff", "--approve", approve, "--reason", "x"]) == 2
    assert not iceberg.table_exists(built.spark, "control.restatement_signoffs") or not built.rows(
        "select * from control.restatement_signoffs")
    assert cli.main(["signoff", "--approve", approve, "--by", "Ana Lima",
                     "--reason", "Q3 close reopened: the order of 2024-09-01 belongs in it"]) == 0
    capsys.readouterr()
    [signed] = Control(built.spark).signoffs()
    assert (signed.signed_by, signed.keys, signed.models, str(signed.first_date), signed.restated_by) == (
        "Ana Lima", 2, "fct_order_item, fct_orders", "2024-09-01", ""), signed
    assert json.loads(built.rows("select impact from control.restatement_signoffs limit 1")[0].impact)

    # the next scheduled restatement restates it, and spends the sign-off
    assert cli.main(["restate", "--reason", "nightly deep restatement"]) == 0
    capsys.readouterr()
    [second] = built.rows("select run_id, status, start_date from control.backfill_runs where run_id <> :r"
                          .replace(":r", f"'{run.run_id}'"))
    assert (second.status, str(second.start_date)) == ("published", "2024-09-01"), second
    assert Control(built.spark).signoffs()[0].restated_by == second.run_id
    for table in ("marts.fct_order_item", "marts.fct_orders"):
        assert built.table(table) == full_refresh_result(built, table), table
    assert stale_aggregates(built, SHOP_AGGREGATES) == {}
    assert built.rows("select * from audit.audit_unreflected_changes") == []


def test_compare_reports_a_hand_made_difference_exactly(built: Warehouse):
    from pipeline.compare import CompareError, compare

    table = "marts.fct_order_item"
    # on top of the three silent misses of the module's set-up: one line gone, one foreign line,
    # one net_amount edited by hand
    victim, edited = [r.order_item_sk for r in built.rows(
        f"select order_item_sk from {table} where order_date = date'2025-01-03' order by 1 limit 2")]
    built.spark.sql(f"delete from {table} where order_item_sk = '{victim}'")
    built.spark.sql(f"insert into {table} select 'not-a-key', order_id, 99, order_date, order_date_key, customer_key,"
                    f" product_key, channel_key, quantity, gross_amount, discount_amount, net_amount, cost_amount,"
                    f" updated_at from {table} where order_item_sk = '{edited}'")
    built.spark.sql(f"update {table} set net_amount = net_amount + 1 where order_item_sk = '{edited}'")
    watermarks = built.rows("select * from control.etl_watermark order by pipeline_name")

    # the oracle: the full refresh's rows against the table's, in Python
    columns = built.spark.table(table).columns
    expected = {r[0]: r for r in full_refresh_result(built, table)}
    actual = {r[0]: r for r in built.table(table)}
    modified = [k for k in expected.keys() & actual.keys() if expected[k] != actual[k]]
    mismatches = {c: n for c, n in ((c, sum(expected[k][i] != actual[k][i] for k in modified))
                                    for i, c in enumerate(columns)) if n}

    result = compare(built.spark, built.dbt, "fct_order_item", "dual_run_test")
    assert (result.missing, result.extra) == (1, 1)
    assert result.modified == len(modified) == 4
    assert result.identical == len(expected.keys() & actual.keys()) - 4
    assert result.column_mismatches == mismatches and mismatches["net_amount"] == 4
    assert result.sample_keys["missing"] == [victim] and result.sample_keys["extra"] == ["not-a-key"]
    assert sorted(result.sample_keys["modified"]) == sorted(modified)
    assert not result.equal
    # the scratch build moved no watermark, left no table, and the project's relations are back
    assert built.rows("select * from control.etl_watermark order by pipeline_name") == watermarks
    assert not built.spark.catalog.tableExists("dual_run_test.fct_order_item")
    from pipeline.manifest import incremental_models

    assert {m.relation for m in incremental_models()} >= {"marts.fct_order_item", "marts.fct_orders"}
    with pytest.raises(CompareError, match="not an incremental model"):
        compare(built.spark, built.dbt, "stg_shop__orders")
    with pytest.raises(CompareError, match="not a schema name"):
        compare(built.spark, built.dbt, "fct_order_item", "x; drop table y")


def test_status_page_renders_in_a_real_browser_with_the_figures_of_a_known_run(built: Warehouse, tmp_path: Path):
    import re
    import shutil
    import subprocess

    from PIL import Image

    from pipeline import report

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is missing: scripts/install_browser.sh installs it"
    backfill = runner(built)
    # repairs fct_orders' share of the module's silent misses; fct_order_item keeps its three
    run_id = backfill.start(backfill.plan("2025-01-01", "2025-01-02", "fct_orders", 1), "status page test")
    assert backfill.status_of(run_id) == "published"
    # a known daily run: the last run of fct_orders recorded by the on-run-end hook
    built.land(order_items=[item(10**6, 1, "2025-01-04 23:00")])
    built.spark.sql("insert into raw.orders select 1000000, 1, 'web', 'placed', timestamp'2025-01-04 23:00',"
                    " timestamp'2025-01-04 23:00', false, current_timestamp(), 'page' ")
    # and a new line of an order of 2025-01-03: the run reads that order's file of its table
    [(placed,)] = built.rows("select min(order_id) from marts.fct_orders where order_date = date'2025-01-03'")
    built.land(order_items=[item(placed, 99, "2025-01-04 23:00")])
    # (declaring that one read of its table may take at most 1% of its files: an alert)
    built.dbt_run("--select", "fct_orders", "--vars", "{max_scan_share: 0.01}")
    [known] = built.rows("select * from control.run_records where model_name = 'fct_orders'"
                         f" and invocation_id = '{built.dbt.last_invocation_id()}'")
    assert known.added_records > 0
    [read] = built.rows("select * from control.run_scans where model_name = 'fct_orders' and role = 'target'"
                        f" and invocation_id = '{built.dbt.last_invocation_id()}'")
    assert 0 < read.largest_scan_files < read.table_data_files and read.over_share
    # the partitions of the two orders' dates: 01-03 (the new line's order) and 01-04 (the new order's)
    assert (read.partitions_planned, read.partitions) == (2, "order_date=2025-01-03, order_date=2025-01-04")
    # 2025-01-01 carries the module's three silent misses: source and mart differ on the page
    mart_total = built.rows("select sum(net_amount) as s from marts.fct_order_item"
                            " where order_date = date'2025-01-01'")[0].s
    source_total = built.rows("select sum(net_amount) as s from staging.int_order_items__current_state"
                              " where order_date = date'2025-01-01' and not is_deleted")[0].s
    assert source_total != mart_total

    page = tmp_path / "status.html"
    written = report.write(built.spark, built.dbt, page, days=14)
    assert any(b["run_id"] == run_id for b in written.backfills)

    def browse(*flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--user-data-dir={tmp_path / 'profile'}", *flags, page.as_uri()],
                              capture_output=True, text=True, timeout=120)

    dom = browse("--dump-dom")
    assert dom.returncode == 0 and "<h1>backfill_safe status</h1>" in dom.stdout, dom.stderr[-2000:]
    text = re.sub(r"<[^>]+>", " ", dom.stdout)
    assert re.search(rf"{run_id}\s+published\s+2025-01-01 \.\. 2025-01-02\s+1/1", text)  # the backfill run
    assert re.search(rf"fct_orders\s+success\s+daily\s+1\s+{known.added_records}\s+{known.deleted_records}"
                     rf"\s+{known.changed_partitions}\s.*?{known.invocation_id}", text)  # the known daily run
    # one section per declared model, from the manifest: the shop's two facts and the rides example's
    sections = {name: re.search(rf'<h3 id="daily-{name}">(.*?)(?=<h3|<h2)', dom.stdout, re.S)
                for name in ("fct_order_item", "fct_orders", "fct_trip")}
    assert all(sections.values()), {name: bool(found) for name, found in sections.items()}
    line_items = re.sub(r"<[^>]+>", " ", sections["fct_order_item"].group(1))
    # date, source rows, mart rows, then source / mart / difference of quantity, then of net_amount
    assert re.search(rf"2025-01-01\s+\d+\s+\d+\s+\d+\s+\d+\s+-?\d+\s+{source_total}\s+{mart_total}"
                     rf"\s+{source_total - mart_total}\s", line_items), line_items[:2000]
    assert sections["fct_order_item"].group(1).count('class="series"') == 2  # source and mart quantity
    assert sections["fct_orders"].group(1).count('class="series"') == 2
    assert "fct_trip: daily fare_amount, source vs mart, last 14 dates: no data" in sections["fct_trip"].group(1)
    # the incremental models that declare no measures are named, not left out in silence
    assert re.search(r"no daily reconciliation .*?: dim_channel, dim_customer, dim_date, dim_driver, dim_product", text)
    assert re.search(r"fct_order_item: 3 keys late beyond their window on 2025-01-01", text)  # an alert
    # what the known run read of its table, and the alert its declared share raised
    share = f"{read.largest_scan_files} / {read.table_data_files} ({read.largest_scan_files / read.table_data_files:.0%})"
    assert re.search(rf"fct_orders\s+marts\.fct_orders\s+target\s+{read.scans}\s+{re.escape(share)}"
                     rf"\s+{read.data_files_planned}\s+{read.data_files_skipped}\s+{read.splits_read}\s+{read.rows_read}"
                     rf"\s+2: order_date=2025-01-03, order_date=2025-01-04\s+0\.01\s+[^\n]*?order_date IN", text), re.findall(r"fct_orders\s+marts\.fct_orders.{0,200}", text)
    assert re.search(rf"fct_orders: its last daily run read {read.largest_scan_files} of its table's "
                     rf"{read.table_data_files} data files in one scan, more than its declared max_scan_share 0\.01",
                     text)
    # the minimal metrics per model: fct_orders' rows and no duplicate key, the backfill's window
    [orders] = built.rows("select count(*) as n from marts.fct_orders")
    metrics = re.sub(r"<[^>]+>", " ", re.search(r'<h2 id="metrics">(.*?)<h2', dom.stdout, re.S).group(1))
    assert re.search(rf"fct_orders\s+{orders.n}\s+0\.0\s+[\d.]+ days\s+1\s+[\d.]+\s+[\d.]+\s+{run_id}\s+0\s",
                     metrics), metrics
    assert dom.stdout.count('class="bar"') >= 1  # the records added per daily run

    shot = tmp_path / "status.png"
    # tall enough to reach the charts below the alerts, the volume section and the tables above them
    screenshot = browse(f"--screenshot={shot}", "--window-size=1000,3000")
    assert screenshot.returncode == 0 and shot.exists(), screenshot.stderr[-2000:]
    colours = Image.open(shot).convert("RGB").getcolors(1_000_000)
    chart_blue = sum(n for n, rgb in colours if rgb == (0x1F, 0x77, 0xB4))
    chart_orange = sum(n for n, rgb in colours if rgb == (0xFF, 0x7F, 0x0E))
    assert chart_blue > 500 and chart_orange > 100, (chart_blue, chart_orange)  # lines, dots and bars drawn


def test_maintenance_expires_the_change_records_this_sessions_runs_read(built: Warehouse):
    """The change records' tables are maintained with the others, in the session that ran the
    models (the main job's, the benchmark's): the aggregates' daily run and a backfill of the
    fact leave this session's cached scope keys over the fact's records; expiring every
    snapshot of the records but the last refreshes Spark's caches of the table, and that
    refresh planned those keys again on the snapshots whose files the expiry had just deleted:
    `NotFoundException: Failed to open input stream ... -m0.avro` (the benchmark's maintain step
    failed so at every scale). Last in the module: the expiry deletes files of the snapshots
    the module's checkpoint holds."""
    from pipeline.maintain import change_record_tables, iceberg_tables, maintain

    [line] = built.rows("select order_id, order_item_id, product_id from staging.stg_shop__order_items"
                        " where not is_deleted order by updated_at desc, order_id limit 1")
    built.land(order_items=[item(line.order_id, line.order_item_id, "2025-01-05 06:00", product_id=line.product_id,
                                 quantity=7)])
    built.dbt_run()  # the fact records the line, the aggregates read its records
    backfill = runner(built)
    backfill.start(backfill.plan("2025-01-03", "2025-01-05", "fct_order_item", 1), "restate after a bad deploy")
    changes = "control.fct_order_item__changes"
    records = built.table(changes)
    # every table, as `pipeline maintain` and the benchmark do (maintaining the records alone
    # did not fail: the other tables' commits come first), but the fact: an earlier test of the
    # module expired its snapshots, and the module's checkpoint put back metadata naming them
    tables = [t for t in iceberg_tables(built.spark) + change_record_tables(built.spark) if t != "marts.fct_order_item"]
    maintained = {r.table: r for r in maintain(built.spark, tables, expire_older_than=timedelta(0), retain_last=1)}
    assert maintained[changes].expired_snapshots > 0, maintained[changes]
    assert built.table(changes) == records
    before = built.table("marts.agg_daily_revenue")
    built.dbt_run()  # the readers run on after it (nothing changed: nothing to merge)
    assert built.table("marts.agg_daily_revenue") == before
