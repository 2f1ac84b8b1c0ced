"""Writers at once through one Spark Thrift Server, where nothing serialises them (the embedded
target's OS lock refuses a second process instead: test_concurrency.py).

One local cluster for the module (cluster_harness), the shop's sample landed and built once,
then each test starts real processes at the same time, as a team's scheduler would: two daily
runs, a landing during a daily run, a backfill publishing while a daily run commits, maintenance
during a daily run, one day's files landed by two processes at once, two days' files landed at
once into the same tables; and a daily run's dbt client killed during its MERGE, and the Thrift
Server itself killed during a daily run and started again. Each writer ends committed, or refused by
Iceberg's optimistic concurrency with the conflict named (nothing of its commit applied); then
one more daily run, alone, and the warehouse must hold every landed version exactly once, no
duplicate key, no watermark above the loadable data, no late change left unreflected and no
backfill left running. Which writer wins a race is the machine's choice: the tests assert what
must hold whatever the interleaving, and print the outcomes."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cluster_harness import Running, ended, running_cluster
from pipeline import cluster
from pipeline.paths import PROJECT_DIR

pytestmark = [pytest.mark.cluster, pytest.mark.extended]  # four JVMs of its own: the extended tier

DAYS = 11  # generated landing days: two for the build, one for each test (two for the landings at once)
# what a writer refused by a concurrent commit says (Iceberg's optimistic concurrency: the
# commit validated against the table's newer snapshot and found a conflicting change)
CONFLICT = re.compile(r"ValidationException|CommitFailedException|[Cc]onflicting (files|delete files|data files)"
                      r"|[Ff]ound conflicting|Cannot commit|main of \S+ moved after the backfill started")
KEYS = {"fct_order_item": "order_item_sk", "fct_orders": "order_id", "dim_customer": "customer_key",
        "dim_product": "product_key", "agg_daily_revenue": "daily_revenue_key",
        "agg_customer_orders": "customer_key"}
RAW = ("orders", "order_items", "customers", "products")


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    yield from running_cluster(tmp_path_factory.mktemp("cluster-state"))


@pytest.fixture(scope="module")
def days(running: Running, tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The sample's generated landing folders, oldest first: the first two landed and the shop
    built (seeds, then its models)."""
    scratch = tmp_path_factory.mktemp("writers")
    landing = scratch / "landing"
    generated = subprocess.run([sys.executable, "-m", "sample", "generate", "--out", str(landing), "--days", str(DAYS),
                                "--orders-per-day", "20"],
                               env={**os.environ, "PYTHONPATH": str(PROJECT_DIR / "scripts")},
                               capture_output=True, text=True, timeout=600)
    assert generated.returncode == 0, generated.stdout[-2000:] + generated.stderr[-2000:]
    days = sorted(d for d in landing.iterdir() if d.is_dir())
    assert len(days) == DAYS, days
    _land(running, scratch / "build", days[0], days[1])
    running.dbt(scratch / "build", "seed")
    running.dbt(scratch / "build", "run", "--selector", "shop_example")
    return days


def _land(running: Running, scratch: Path, *days: Path) -> None:
    landed = running.pipeline(scratch, "land", *sorted(str(f) for d in days for f in d.iterdir()))
    assert landed.returncode == 0, landed.stdout[-4000:] + landed.stderr[-3000:]


def _ended(process: subprocess.Popen[str], name: str) -> tuple[int, str]:
    code, output = ended(process)
    print(f"--- {name}: exit {code}\n{output[-1500:]}")
    return code, output


def _wait_for(process: subprocess.Popen[str], pattern: str, timeout: float = 600) -> None:
    """Until `pattern` appears in what a running process printed (or it ended)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if re.search(pattern, process.output.read_text()):
            return
        time.sleep(0.5)


def _committed_or_refused(code: int, output: str, name: str) -> str:
    """A writer's outcome: committed, or refused by a concurrent commit with the conflict named."""
    if code == 0:
        return "committed"
    conflict = CONFLICT.search(output)
    assert conflict, f"{name} failed, and not on a commit conflict:\n{output[-5000:]}"
    return "refused: " + conflict.group(0)


def _settled(running: Running, scratch: Path) -> list[str]:
    """One more daily run, alone; then what must hold whatever the writers before it did."""
    running.dbt(scratch, "run", "--selector", "shop_example")
    return _problems(running)


def _problems(running: Running) -> list[str]:
    found = []
    for table, key in KEYS.items():
        [(rows, keys)] = running.query(f"select count(*), count(distinct {key}) from marts.{table}")
        if rows != keys:
            found.append(f"marts.{table}: {rows - keys} duplicate {key}")
    # every landed file once in the landing log, and its rows once in its raw table
    logged = {}
    for table, source_file, entries, file_rows in running.query(
            "select table_name, source_file, count(*), max(file_rows) from control.landed_files group by 1, 2"):
        if entries != 1:
            found.append(f"{source_file}: logged {entries} times in control.landed_files")
        logged[(table.split(".")[-1], source_file)] = file_rows
    for table in RAW:
        for source_file, rows in running.query(f"select _source_file, count(*) from raw.{table} group by 1"):
            if logged.get((table, source_file)) != rows:
                found.append(f"raw.{table}: {rows} rows of {source_file}, logged {logged.get((table, source_file))}")
    [(loadable,)] = running.query("select cast(max(updated_at) as string) from ("
                                  + " union all ".join(f"select updated_at from raw.{t}" for t in RAW) + ")")
    for pipeline_name, watermark in running.query(
            "select pipeline_name, cast(watermark_ts as string) from control.etl_watermark"
            f" where watermark_ts > timestamp'{loadable}'"):
        found.append(f"watermark of {pipeline_name} {watermark} above the loadable data ({loadable})")
    shop = ", ".join(f"'{t}'" for t in KEYS)
    for model, problem, keys in running.query(
            "select model_name, problem, count(*) from audit.audit_unreflected_changes"
            f" where model_name in ({shop}) group by 1, 2"):
        found.append(f"{model}: {keys} keys {problem} (audit_unreflected_changes)")
    if [r for r in running.query("show tables in control like 'backfill_runs'")]:
        for run_id, status in running.query("select run_id, status from control.backfill_runs"
                                            " where status = 'running'"):
            found.append(f"backfill {run_id} left {status}")
    return found


def test_two_daily_runs_at_once_lose_and_double_nothing(running: Running, days: list[Path], tmp_path: Path):
    _land(running, tmp_path / "land", days[2])
    first = running.dbt_process(tmp_path / "first", "run", "--selector", "shop_example")
    second = running.dbt_process(tmp_path / "second", "run", "--selector", "shop_example")
    outcomes = [_committed_or_refused(*_ended(p, n), n) for p, n in ((first, "first run"), (second, "second run"))]
    print("outcomes:", outcomes)
    assert _settled(running, tmp_path / "settle") == []


def test_a_version_landed_during_a_daily_run_is_loaded_by_it_or_the_next(running: Running, days: list[Path],
                                                                       tmp_path: Path):
    daily = running.dbt_process(tmp_path / "daily", "run", "--selector", "shop_example")
    # once the run has started its models (its start, the landing bound, is taken)
    _wait_for(daily, r"START sql")
    _land(running, tmp_path / "land", days[3])
    print("outcome:", _committed_or_refused(*_ended(daily, "daily run"), "daily run"))
    assert _settled(running, tmp_path / "settle") == []


def test_a_backfill_publishing_while_a_daily_run_commits_loses_nothing(running: Running, days: list[Path],
                                                                      tmp_path: Path):
    _land(running, tmp_path / "land", days[4])
    backfill = running.pipeline_process(tmp_path / "backfill", "backfill", "--start", "2025-01-01",
                                        "--end", "2025-01-03", "--select", "fct_order_item",
                                        "--reason", "concurrent writers test")
    _wait_for(backfill, r"window 1/")
    daily = running.dbt_process(tmp_path / "daily", "run", "--selector", "shop_example")
    outcomes = [_committed_or_refused(*_ended(p, n), n) for p, n in ((backfill, "backfill"), (daily, "daily run"))]
    print("outcomes:", outcomes)
    statuses = [s for (s,) in running.query("select status from control.backfill_runs"
                                            " where reason = 'concurrent writers test'")]
    assert len(statuses) == 1 and statuses[0] in ("published", "publish_refused", "failed"), statuses
    assert _settled(running, tmp_path / "settle") == []


def test_maintenance_during_a_daily_run_loses_nothing(running: Running, days: list[Path], tmp_path: Path):
    _land(running, tmp_path / "land", days[5])
    daily = running.dbt_process(tmp_path / "daily", "run", "--selector", "shop_example")
    _wait_for(daily, r"START sql")
    maintain = running.pipeline_process(tmp_path / "maintain", "maintain", "--expire-days", "0", "--retain-last", "2")
    outcomes = [_committed_or_refused(*_ended(p, n), n) for p, n in ((daily, "daily run"), (maintain, "maintain"))]
    print("outcomes:", outcomes)
    assert _settled(running, tmp_path / "settle") == []


def test_one_file_landed_by_two_processes_at_once_is_landed_once(running: Running, days: list[Path], tmp_path: Path):
    files = sorted(str(f) for f in days[6].iterdir())
    # the same files, in the same order, from two processes started together: each finds a file
    # not landed yet, and both append it, unless the second commit is refused and looks again
    landings = [running.pipeline_process(tmp_path / name, "land", *files) for name in ("first", "second")]
    outputs = [_ended(p, n) for p, n in zip(landings, ("first landing", "second landing"))]
    assert [code for code, _ in outputs] == [0, 0], "a landing failed (above)"
    assert _problems(running) == []
    for table in RAW:
        [(logged,)] = running.query(f"select count(*) from control.landed_files where table_name like '%.{table}'"
                                    f" and source_file like '{days[6]}/%'")
        assert logged == 1, f"raw.{table}: the day's file logged {logged} times"


def test_landings_of_different_files_into_the_same_tables_at_once_do_not_refuse_each_other(
        running: Running, days: list[Path], tmp_path: Path):
    """Two days' files, one per raw table each, landed by two processes started together: each
    commit is validated against the rows of its own files only (the appends' filter is the file's
    path, the landing log's the batch's paths, and both tables keep the paths whole in their
    column metrics), so neither landing's commit is refused by the other's."""
    landings = [running.pipeline_process(tmp_path / f"day{n}", "land", *sorted(str(f) for f in days[n].iterdir()))
                for n in (7, 8)]
    outputs = [_ended(p, f"landing of {days[n].name}") for p, n in zip(landings, (7, 8))]
    assert [code for code, _ in outputs] == [0, 0], "a landing failed (above)"
    refused = [line for _, output in outputs for line in output.splitlines() if "refused commit" in line]
    assert refused == [], "a landing of other files refused a commit:\n" + "\n".join(refused)
    assert _problems(running) == []


def _partitions_written(running: Running, table: str, base: int, head: int) -> list[str]:
    """The event dates (partitions) each snapshot from `base` (excluded) to `head` wrote to
    `table`, one entry per snapshot and partition: from the per-partition summaries the
    parallel windows turn on (write.summary.partition-limit)."""
    parents = dict(running.query(f"select snapshot_id, parent_id from {table}.snapshots"))
    chain, cursor = [], head
    while cursor is not None and cursor != base:
        chain.append(cursor)
        cursor = parents.get(cursor)
    assert cursor == base, f"{table}: {base} is not an ancestor of {head}"
    written = []
    for snapshot in chain:
        for (key,) in running.query(f"select k from (select explode(map_keys(summary)) as k from {table}.snapshots"
                                    f" where snapshot_id = {snapshot}) where k like 'partitions.%'"):
            written.append(key.split("=", 1)[1])
    return written


def _corrupt_the_facts(running: Running) -> None:
    """Every line and order of the backfill's dates made wrong in the marts (what a backfill is
    for): each window has its own partitions to rewrite, and the audit lists them until then."""
    running.execute("update marts.fct_order_item set quantity = quantity + 100"
                    " where order_date >= date'2025-01-01' and order_date < date'2025-01-05'")
    running.execute("update marts.fct_orders set total_quantity = total_quantity + 100"
                    " where order_date >= date'2025-01-01' and order_date < date'2025-01-05'")
    stale = running.query("select count(*) from audit.audit_unreflected_changes where problem = 'stale'")
    assert stale[0][0] > 0, "the corrupted rows are not seen as stale"


def test_windows_at_once_write_each_partition_once_and_publish_what_one_at_a_time_would(
        running: Running, days: list[Path], tmp_path: Path):
    """`pipeline backfill --parallel 2` through the Thrift Server: two worker processes run the
    facts' and the daily revenue's windows at once (each its own dates' partitions), then the
    customers' lifetime figures (a table not partitioned by date) one window at a time.
    Windows ran at the same time; no partition was written by two snapshots; each window's
    figures are its own dates'; published, the marts hold what the sources say (no late change
    unreflected, no duplicate). The same backfill one window at a time, for the wall time."""
    select = "fct_order_item fct_orders"
    args = ("backfill", "--start", "2025-01-01", "--end", "2025-01-05", "--batch-days", "1", "--select", select)
    _corrupt_the_facts(running)
    started = time.monotonic()
    done = running.pipeline(tmp_path / "parallel", *args, "--parallel", "2", "--reason", "windows at once")
    parallel_seconds = time.monotonic() - started
    print(done.stdout[-6000:], done.stderr[-3000:])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    printed = " ".join(done.stdout.split())
    assert "2 windows at once for agg_daily_revenue, fct_order_item, fct_orders; then, one window at a time," \
        " agg_customer_orders (its table is not partitioned by its event date)" in printed, printed
    [(run_id,)] = running.query("select run_id from control.backfill_runs where reason = 'windows at once'")
    events = running.query("select window_index, window_start, status, unix_micros(started_at),"
                           f" unix_micros(finished_at), table_stats from control.backfill_window_events"
                           f" where run_id = '{run_id}' and status in ('loaded', 'done')")
    loaded = {i: (start, begun, ended, json.loads(stats)) for i, start, status, begun, ended, stats in events
              if status == "loaded"}
    assert sorted(loaded) == [0, 1, 2, 3], events
    spans = sorted((begun, ended) for _, begun, ended, _ in loaded.values())
    assert any(later_begun < earlier_ended for (_, earlier_ended), (later_begun, _) in zip(spans, spans[1:])), \
        f"no two windows ran at the same time: {spans}"
    tables = {r[0]: (r[1], r[2]) for r in running.query(
        f"select table_name, base_snapshot_id, published_snapshot_id from control.backfill_tables"
        f" where run_id = '{run_id}'")}
    for table in ("marts.fct_order_item", "marts.fct_orders", "marts.agg_daily_revenue"):
        base, head = tables[table]
        written = _partitions_written(running, table, base, head)
        assert len(written) == len(set(written)), f"{table}: a partition written twice: {sorted(written)}"
        assert set(written) <= {"2025-01-01", "2025-01-02", "2025-01-03", "2025-01-04"}, written
        rows_by_date = dict(running.query(f"select cast(order_date as string), count(*) from {table} group by 1"))
        for index, (start, _, _, stats) in loaded.items():
            # the window's figures: its own date's partition, written when the date has rows
            wrote = str(start) in written
            if table != "marts.agg_daily_revenue":  # every corrupted date of a fact is rewritten
                assert wrote == bool(rows_by_date.get(str(start))), (table, start, written, rows_by_date)
            assert (stats[table]["changed_partitions"] == 1) == wrote, (table, start, stats[table], written)
            assert (stats[table]["added"] > 0) == wrote, (table, start, stats[table])
    assert _problems(running) == []

    _corrupt_the_facts(running)
    started = time.monotonic()
    one = running.pipeline(tmp_path / "one", *args, "--reason", "one window at a time")
    one_seconds = time.monotonic() - started
    assert one.returncode == 0, one.stdout[-6000:] + one.stderr[-3000:]
    print(f"4 windows of {select} and what reads them: --parallel 2 {parallel_seconds:.1f} s,"
          f" one at a time {one_seconds:.1f} s")
    assert _problems(running) == []


def test_windows_at_once_killed_mid_run_resume_only_the_unfinished_ones(running: Running, days: list[Path],
                                                                         tmp_path: Path):
    """A `--parallel 2` backfill SIGKILLed once its first window is checkpointed: its workers
    finish the window they run and end (their stdin closes); `--resume --parallel 2` runs
    only the windows not recorded, and publishes what the sources say."""
    _corrupt_the_facts(running)
    killed = running.pipeline_process(tmp_path / "killed", "backfill", "--start", "2025-01-01", "--end", "2025-01-05",
                                      "--batch-days", "1", "--select", "fct_order_item fct_orders", "--parallel", "2",
                                      "--reason", "killed windows at once")
    _wait_for(killed, r"fct_orders\s+done\s+in")  # a window of the first models checkpointed
    assert killed.poll() is None, killed.output.read_text()[-3000:]
    killed.send_signal(signal.SIGKILL)
    _ended(killed, "backfill killed mid-run")
    [(run_id,)] = running.query("select run_id from control.backfill_runs where reason = 'killed windows at once'")
    recorded = {i for (i,) in running.query("select window_index from control.backfill_window_events"
                                            f" where run_id = '{run_id}' and status = 'loaded'")}
    assert 1 <= len(recorded) < 4, recorded
    resumed = running.pipeline(tmp_path / "resumed", "backfill", "--resume", run_id, "--parallel", "2")
    print(resumed.stdout[-4000:], resumed.stderr[-2000:])
    assert resumed.returncode == 0, resumed.stdout[-6000:] + resumed.stderr[-3000:]
    loads = running.query("select window_index, count(*) from control.backfill_window_events"
                          f" where run_id = '{run_id}' and status = 'loaded' group by 1")
    assert {i for i, n in loads if n > 1}.isdisjoint(recorded), loads  # a recorded window ran once
    assert sorted(i for i, _ in loads) == [0, 1, 2, 3], loads
    [(status,)] = running.query(f"select status from control.backfill_runs where run_id = '{run_id}'")
    assert status == "published"
    assert _problems(running) == []


def _wait_for_log(log: Path, pattern: str, process: subprocess.Popen[str], timeout: float = 600) -> bool:
    """Until `pattern` appears in a dbt log file (debug: every statement as it is sent), or the
    process ended first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if log.exists() and re.search(pattern, log.read_text(errors="replace")):
            return True
        time.sleep(0.2)
    return False


def test_a_daily_run_whose_dbt_client_is_killed_during_its_merge_is_finished_by_the_next(
        running: Running, days: list[Path], tmp_path: Path):
    """The client dies; the Thrift Server may still finish the MERGE it was sent (its commit is
    the server's), but the run's end never commits the watermarks: the next run reads the same
    versions again and changes nothing the MERGE already wrote."""
    _land(running, tmp_path / "land", days[9])
    daily = running.dbt_process(tmp_path / "killed", "run", "--selector", "shop_example")
    sent = _wait_for_log(tmp_path / "killed" / "logs" / "dbt.log", r"merge into marts\.fct_order_item ", daily)
    assert sent and daily.poll() is None, "the run ended before its MERGE could be killed"
    time.sleep(0.5)
    daily.send_signal(signal.SIGKILL)
    code, _ = _ended(daily, "daily run killed during its MERGE")
    assert code == -signal.SIGKILL
    assert _settled(running, tmp_path / "settle") == []


def test_a_thrift_server_killed_during_a_daily_run_and_started_again_loses_nothing(
        running: Running, days: list[Path], tmp_path: Path):
    """The server's JVM is SIGKILLed while it runs a fact's MERGE: the run fails (its connection
    is gone), Iceberg never saw a commit that was not whole; the cluster is started again on the
    same port (the module's last test: the fixture stops that one) and the next run loads it all."""
    _land(running, tmp_path / "land", days[10])
    daily = running.dbt_process(tmp_path / "daily", "run", "--selector", "shop_example")
    sent = _wait_for_log(tmp_path / "daily" / "logs" / "dbt.log", r"merge into marts\.fct_order_item ", daily)
    assert sent and daily.poll() is None, "the run ended before its server could be killed"
    time.sleep(0.5)
    os.killpg(running.info.pids["thriftserver"], signal.SIGKILL)
    code, output = _ended(daily, "daily run whose Thrift Server was killed")
    assert code != 0, "the run succeeded although its server was killed"
    cluster.stop(running.state)
    # the killed server's connections hold its port in TIME_WAIT for a while
    deadline = time.monotonic() + 240
    while True:
        try:
            cluster.start(running.state, thrift_port=running.info.thrift_port, timeout=300)
            break
        except cluster.ClusterRefused:
            if time.monotonic() > deadline:
                raise
            time.sleep(5)
    assert _settled(running, tmp_path / "settle") == []
