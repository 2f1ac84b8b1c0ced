"""Cluster mode: a local Spark standalone cluster (master, two workers, each its own JVM) and a
Spark Thrift Server on it, reached by dbt through the `cluster` target of profiles/profiles.yml.

One cluster for the module, on free loopback ports, in a temporary state folder; always stopped
at the end, whatever fails. dbt runs as a subprocess (`.venv/bin/dbt --target cluster`), as a
user would run it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cluster_harness import DBT, Running, running_cluster
from helpers import MAIN_JOB_SAMPLE, SHOP_MARTS, MainJobRun, mart_checksums
from pipeline import cluster, cluster_topology
from pipeline.paths import PROJECT_DIR

pytestmark = [pytest.mark.cluster, pytest.mark.extended]  # four JVMs of its own: the extended tier


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from running_cluster(tmp_path_factory.mktemp("cluster-state"))


def _script(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIPELINE_STATE_DIR": str(state)}
    return subprocess.run(["bash", str(PROJECT_DIR / "scripts" / "cluster.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def _describe(running: Running, table: str) -> dict[str, str]:
    return {row[0]: row[1] for row in running.query(f"describe table extended {table}")}


SAMPLE = ("--days", str(MAIN_JOB_SAMPLE["days"]), "--orders-per-day", str(MAIN_JOB_SAMPLE["orders_per_day"]))
# a reason reaches SQL as a literal on the Thrift path (no server-side binding): stored verbatim
HOSTILE_REASON = "restate 2025-01-01..03 after the 'price' fix\\'; drop table control.backfill_runs; --"


@dataclass(frozen=True)
class Built:
    scratch: Path  # the dbt and pipeline subprocesses' folders
    stdout: str  # what `dbt build` printed


@pytest.fixture(scope="module")
def built(running: Running, tmp_path_factory: pytest.TempPathFactory) -> Built:
    """The main job's sample, generated, landed (`pipeline land`) and built with one `dbt build`
    of the shop's models through the Thrift Server (seeds, models, hooks, watermark, data and
    unit tests): the rides example's models add a quarter of the statements, each a round trip to
    the server, and prove nothing more about the engine (the embedded tiers run them)."""
    scratch = tmp_path_factory.mktemp("cluster-build")
    landing = scratch / "landing"
    generated = subprocess.run([sys.executable, "-m", "sample", "generate", "--out", str(landing), *SAMPLE],
                               env={**os.environ, "PYTHONPATH": str(PROJECT_DIR / "scripts")},
                               capture_output=True, text=True, timeout=600)
    assert generated.returncode == 0, generated.stdout[-2000:] + generated.stderr[-2000:]
    landed = running.pipeline(scratch, "land", *sorted(str(d) for d in landing.iterdir()))
    assert landed.returncode == 0, landed.stdout[-4000:] + landed.stderr[-3000:]
    return Built(scratch, running.dbt(scratch, "build", "--selector", "shop_example").stdout)  # selectors.yml


def test_dbt_seeds_and_runs_iceberg_models_through_the_thrift_server(running: Running, built: Built, tmp_path: Path):
    assert "Connection test: [OK connection ok]" in running.dbt(tmp_path, "debug").stdout
    assert running.query("select count(*) from reference.channels") == [(5,)]
    assert running.query("select count(*), min(date_day), max(date_day) from marts.dim_date") == [
        (1461, "2024-01-01", "2027-12-31")]
    for table in ("reference.channels", "marts.dim_date", "marts.fct_order_item"):
        described = _describe(running, table)
        assert described["Provider"] == "iceberg", described
        # the cluster's own warehouse, never the embedded one
        assert described["Location"].startswith(f"file:{running.state / 'cluster' / 'warehouse'}/"), described
    assert "write.wap.enabled=true" in _describe(running, "marts.dim_date")["Table Properties"]
    assert running.query("select count(*) from marts.dim_date.snapshots") == [(1,)]
    # the on-run-start and on-run-end hooks ran through the Thrift Server too
    assert running.query("select status from control.run_records where model_name = 'dim_date'") == [("success",)]


@pytest.mark.spark
def test_a_build_and_a_backfill_through_the_thrift_server_equal_the_embedded_main_job(
        running: Running, built: Built, main_job_sample: MainJobRun):
    """The main job's sample, landed and built once through the cluster target (the module's
    `built`), equals the embedded main job's marts, which built the same days in two runs (rule
    8: a full build equals its daily runs; the embedded tiers prove the daily runs). Then a
    backfill with branch, gate and publish, and its rollback, on the cluster."""
    scratch = built.scratch
    # the shop's dbt unit tests ran through the Thrift Server too (macros/tests/unit.sql)
    for unit_test in ("stg_shop__order_items_keeps_the_latest_loadable_version_of_each_line",
                      "stg_shop__order_items_ranks_versions_by_the_contracts_update_column"):
        assert re.search(rf"PASS \S*{unit_test}\b", built.stdout), built.stdout[-4000:]
    on_cluster = mart_checksums(running.query)
    assert all(on_cluster[t][0] > 0 for t in SHOP_MARTS), on_cluster
    # the watermark advanced through the Thrift Server, to the greatest update time landed
    watermarks = dict(running.query("select pipeline_name, cast(watermark_ts as string) from control.etl_watermark"
                                    " where watermark_ts is not null"))
    assert {"fct_order_item", "fct_orders"} <= set(watermarks), watermarks
    # what each model read, recorded from the Thrift Server's own SQL status store (the class
    # backfill_safe.ScanLog on its driver's class path)
    read = {(m, t): (planned, rows) for m, t, planned, rows in running.query(
        "select model_name, table_name, data_files_planned, rows_read from control.run_scans")}
    [(landed_lines,)] = running.query("select count(*) from raw.order_items")
    assert read[("fct_order_item", "raw.order_items")][1] >= landed_lines > 0  # a first build reads them all
    assert read[("dim_customer", "raw.customers")][0] > 0

    # the same sample on the embedded Spark (once per session, test_main_job reads it too)
    assert main_job_sample.exit_code == 0, main_job_sample.output
    embedded = main_job_sample.checksums
    assert on_cluster == embedded

    # a bad deploy on the cluster: every fct_order_item row of the backfill's dates off by a cent
    # (a window whose rows all equal the table's commits nothing: no MERGE runs)
    running.execute("update marts.fct_order_item set net_amount = net_amount + 0.01"
                    " where order_date >= date'2025-01-01' and order_date < date'2025-01-04'")
    corrupted = mart_checksums(running.query)
    assert corrupted != embedded

    # a backfill through the runner on the cluster: a branch, the gate, publish, then rollback
    backfill = running.pipeline(scratch, "backfill", "--start", "2025-01-01", "--end", "2025-01-04",
                         "--batch-days", "3", "--select", "fct_order_item", "--reason", HOSTILE_REASON)
    assert backfill.returncode == 0, backfill.stdout[-4000:] + backfill.stderr[-3000:]
    [(run_id, status, reason)] = running.query("select run_id, status, reason from control.backfill_runs")
    assert (status, reason) == ("published", HOSTILE_REASON)
    # the window's figures come from the branch's snapshots, read through the runner's own
    # sessions while dbt's sessions commit (fresh metadata, not a session's cached snapshot)
    stats = running.query(f"select table_stats from control.backfill_window_events where run_id = '{run_id}'"
                          " and status = 'done' order by window_index")
    assert [json.loads(s)["marts.fct_order_item"]["snapshots"] for (s,) in stats] == [1], stats
    tables = running.query("select table_name, pre_publish_snapshot_id, published_snapshot_id"
                           f" from control.backfill_tables where run_id = '{run_id}' order by table_name")
    # fct_orders does not read the line fact; the daily revenue does (its scope: what the line
    # fact's window recorded), and it was summed before the bad deploy: recomputed, it is unchanged
    assert [t[0] for t in tables] == ["marts.agg_daily_revenue", "marts.fct_order_item"]
    for table, pre, published in tables:
        if table == "marts.fct_order_item":  # the window committed on the branch, main fast-forwarded to it
            assert published != pre, table
        assert running.query(f"select snapshot_id from {table}.refs where name = 'main'") == [(published,)]
        assert running.query(f"select count(*) from {table}.refs where name = '{run_id}'") == [(0,)]
    # the same source state, restated: the same rows
    assert mart_checksums(running.query) == embedded

    rollback = running.pipeline(scratch, "rollback", run_id)
    assert rollback.returncode == 0, rollback.stdout[-4000:] + rollback.stderr[-3000:]
    for table, pre, _published in tables:
        assert running.query(f"select snapshot_id from {table}.refs where name = 'main'") == [(pre,)]
    assert running.query(f"select status from control.backfill_runs where run_id = '{run_id}'") == [("rolled_back",)]
    assert mart_checksums(running.query) == corrupted  # back to the table as it was before the backfill

    # before the next daily run, `pipeline explain` through the Thrift Server: the select and the
    # MERGE planned in the connection's own session (where dbt's temporary views live)
    # (a correction of one order line, appended as the landing would: a later version, stamped)
    [(order_id, item_id, later)] = running.query(
        "select order_id, order_item_id, cast((select max(updated_at) from raw.order_items) + interval 1 hour"
        " as string) from raw.order_items order by order_id, order_item_id limit 1")
    running.execute(f"insert into raw.order_items select order_id, order_item_id, product_id, quantity + 1,"
                    f" unit_price, discount_amount, timestamp'{later}', false, current_timestamp(), 'correction'"
                    f" from raw.order_items where order_id = {order_id} and order_item_id = {item_id}"
                    f" order by updated_at desc limit 1")
    [(order_date,)] = running.query(f"select distinct cast(order_date as string) from marts.fct_order_item"
                                    f" where order_id = {order_id}")
    explained_json = scratch / "explain.json"
    explained = running.pipeline(scratch, "explain", "fct_order_item", "--json", str(explained_json))
    assert explained.returncode == 0, explained.stdout[-4000:] + explained.stderr[-3000:]
    [explanation] = json.loads(explained_json.read_text())
    merge = [s for s in explanation["scans"] if s["statement"] == "merge" and s["role"] == "target"]
    assert merge and all(f"order_date={order_date}" in s["partitions"] for s in merge), explanation
    [keys] = re.findall(r"order_id IN \(([^)]*)\)", merge[0]["filters"])
    assert str(order_id) in keys.split(", "), merge[0]["filters"]
    assert any(r["table"] == "raw.order_items" and r["rows"] > 0 for r in explanation["ran"]), explanation
    assert mart_checksums(running.query) == corrupted  # explained, not run


def test_tasks_run_on_executors_of_both_workers(running: Running):
    deadline = time.monotonic() + 180
    topology = cluster_topology.topology(running.state)
    while len({e.worker_id for e in topology.executors if e.worker_id}) < 2 and time.monotonic() < deadline:
        time.sleep(2)
        topology = cluster_topology.topology(running.state)
    workers = {w.id for w in topology.alive_workers}
    assert len(workers) == 2, topology
    assert {e.worker_id for e in topology.executors} == workers, topology

    for _ in range(3):  # two free single-core executors each take a task of the first wave; retry anyway
        assert running.query("select count(*) from range(0, 1000000, 1, 8)") == [(1000000,)]
        time.sleep(1)  # the REST API's task counts follow the listener
        topology = cluster_topology.topology(running.state)
        if topology.workers_with_tasks() == workers:
            break
    assert topology.workers_with_tasks() == workers, topology


def test_a_project_of_20_declared_models_runs_its_day_and_its_audit_lists_a_late_row_of_each_on_the_cluster(
        running: Running, tmp_path: Path):
    """test_many_declared_models through the Thrift Server: the audit's tree of views in the
    server's own metastore (issue 78: one union of every model's audit outgrew the metastore's
    view text at 8 declared models)."""
    from harness.generated_project import write_project
    from helpers import driver, trip, write_parquet

    project = tmp_path / "project"
    generated = write_project(project, 14)
    selected = ("--select", "+path:models/marts/generated", "fct_trip")

    def dbt(*args: str) -> None:
        done = subprocess.run([str(DBT), *args, "--project-dir", str(project), "--profiles-dir",
                               str(PROJECT_DIR / "profiles"), "--target", "cluster"],
                              env=running.env(tmp_path), capture_output=True, text=True, timeout=1800)
        assert done.returncode == 0, f"dbt {' '.join(args)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"

    def land(name: str, **tables: list[dict]) -> None:
        files = [write_parquet(tmp_path / name / f"{table}.parquet", table, rows) for table, rows in tables.items()]
        landed = running.pipeline(tmp_path, "land", *map(str, files))
        assert landed.returncode == 0, landed.stdout + landed.stderr

    land("day1", drivers=[driver(7, "2024-12-01 00:00", rate="0.2000")],
         trips=[trip(1, "2025-01-02 10:00", fare="20.00"), trip(2, "2025-01-10 10:00", fare="30.00")])
    dbt("run", *selected)
    land("day2", trips=[trip(1, "2025-01-02 10:00", "2025-01-03 09:00", fare="25.00"),
                        trip(4, "2025-01-11 10:00", fare="40.00")])
    dbt("run", *selected)
    audit = running.query("select model_name, unique_key, problem from audit.audit_unreflected_changes"
                          " where model_name like 'fct_generated_%' or model_name = 'fct_trip'")
    assert sorted(audit) == sorted((name, "1", "stale") for name in [*generated, "fct_trip"])
    for name in generated:
        assert sorted(running.query(f"select trip_id from marts.{name}")) == [(1,), (2,), (4,)]


def test_a_second_start_is_refused_and_the_first_cluster_keeps_running(running: Running):
    refused = _script(running.state, "start")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "is already running" in refused.stderr and "cluster.sh stop" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    with pytest.raises(cluster.ClusterRunning):
        cluster.start(running.state, thrift_port=cluster.free_port())

    assert cluster.info(running.state) == running.info
    assert all(cluster.process_states(running.info).values())
    assert running.query("select 1") == [(1,)]
    status = _script(running.state, "status")
    assert status.returncode == 0 and "workers ALIVE at the master: 2" in status.stdout, status.stdout


def test_stop_leaves_no_process_and_a_second_stop_is_harmless(running: Running):
    cdir = running.state / "cluster"
    pids = set(running.info.pids.values())
    stopped = cluster.stop(running.state)
    assert pids <= set(stopped)
    assert cluster._tagged_pids(cdir) == set()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not (cdir / "cluster.json").exists()
    assert cluster.info(running.state) is None

    assert cluster.stop(running.state) == []
    again = _script(running.state, "stop")
    assert again.returncode == 0 and "nothing runs" in again.stdout, again.stdout + again.stderr
    assert _script(running.state, "status").returncode == 1

