"""`pipeline cluster start | stop | status`: the local Spark cluster and Thrift Server of the `cluster` target."""

from __future__ import annotations

import sys
import time

import click

from pipeline.cli import EXIT_CODES
from pipeline.cluster import DEFAULT_THRIFT_PORT


@click.option(
    "--thrift-port",
    type=int,
    default=None,
    metavar="N",
    help=f"Port of the Thrift Server. Default: {DEFAULT_THRIFT_PORT} if free, else a free one.",
)
@click.option("--worker-memory", default="2g", show_default=True, help="Memory each worker offers.")
@click.option("--executor-memory", default="1g", show_default=True, help="Memory of each executor.")
@click.option("--driver-memory", default="1g", show_default=True, help="Memory of the Thrift Server's driver.")
@click.option(
    "--timeout", type=float, default=180.0, show_default=True, metavar="S", help="Seconds the whole start may take."
)
def start(thrift_port, worker_memory, executor_memory, driver_memory, timeout) -> int:
    """Start the cluster and print the `export` lines dbt's cluster target reads."""
    from pipeline import cluster as local

    try:
        started_at = time.monotonic()
        state = local.start(
            thrift_port=thrift_port,
            worker_memory=worker_memory,
            executor_memory=executor_memory,
            driver_memory=driver_memory,
            timeout=timeout,
        )
    except local.ClusterRefused as error:
        print(f"refused: {error}", file=sys.stderr)
        return 2
    except local.ClusterError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"cluster started in {time.monotonic() - started_at:.0f} s from {local.cluster_dir()}")
    _print_state(local, state)
    print("to run the project on it:")
    for line in state.exports():
        print(f"  {line}")
    return 0


def stop() -> int:
    """Stop every process of this state folder's cluster (found by their command line too)."""
    from pipeline import cluster as local

    stopped = local.stop()
    cdir = local.cluster_dir()
    print(f"stopped {len(stopped)} processes of {cdir}" if stopped else f"nothing runs from {cdir}")
    return 0


def status() -> int:
    """Show the processes, their logs, the workers alive at the master and the exports."""
    from pipeline import cluster as local
    from pipeline import cluster_topology

    cdir = local.cluster_dir()
    state = local.load_state(cdir)
    if state is None or local.info() is None:
        print(f"no cluster runs from {cdir}" + (" (stale state file; `stop` removes it)" if state else ""))
        return 1
    _print_state(local, state)
    workers = cluster_topology.alive_worker_ids(state)
    print(f"workers ALIVE at the master: {len(workers)} ({', '.join(workers)})")
    for line in state.exports():
        print(f"  {line}")
    return 0


def register(group: click.Group) -> None:
    """`pipeline cluster start | stop | status`, each with its --help's exit codes."""

    @group.group(
        "cluster",
        short_help="Start, stop or show the local Spark cluster and Thrift Server.",
        epilog=f"Exit codes: {EXIT_CODES['cluster']}.",
    )
    def cluster() -> None:
        """A Spark master, two single-core workers and a Spark Thrift Server on them, all on
        127.0.0.1, with the embedded target's Iceberg settings and their own metastore and warehouse
        in <state dir>/cluster/. `start` prints the exports dbt needs (--target cluster)."""

    cluster.command(
        "start",
        short_help="Start the cluster and print the exports dbt needs.",
        epilog="Exit codes: 0 started, 1 failed (names the log to read), 2 refused "
        "(already running, stray processes of an earlier cluster, port in use).",
    )(start)
    cluster.command(
        "stop", short_help="Stop every process of the cluster.", epilog="Exit codes: 0 (stopped, or nothing ran)."
    )(stop)
    cluster.command(
        "status", short_help="Show the processes, logs and exports.", epilog="Exit codes: 0 running, 1 not running."
    )(status)


def _print_state(local, state) -> None:
    running = local.process_states(state)
    print(f"master        {state.master_url}  web UI {state.master_ui_url}")
    print(f"thrift server {state.thrift_host}:{state.thrift_port}  web UI {state.thrift_ui_url}")
    for name, pid in state.pids.items():
        print(f"  {name:<13} pid {pid:<8} {'running' if running[name] else 'NOT RUNNING':<12} log {state.logs[name]}")
