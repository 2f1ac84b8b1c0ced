"""A local Spark standalone cluster and its Thrift Server for a test module, and dbt and
`pipeline` run against it as a user runs them: processes of their own, with the cluster target."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pyhive import hive

from pipeline import cluster
from pipeline.paths import PROJECT_DIR

DBT = Path(sys.executable).parent / "dbt"


@dataclass(frozen=True)
class Running:
    state: Path  # the state folder (the cluster's files are in state / "cluster")
    info: cluster.ClusterInfo
    start_seconds: float

    def env(self, scratch: Path) -> dict[str, str]:
        """A dbt subprocess's environment: this cluster's Thrift endpoint, its own target folder."""
        env = {**os.environ, **self.info.env(), "DBT_TARGET_PATH": str(scratch / "target"),
               "DBT_LOG_PATH": str(scratch / "logs"), "DBT_USE_COLORS": "false"}
        env.pop("DBT_TARGET", None)
        return env

    def dbt(self, scratch: Path, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(_dbt_command(args), env=self.env(scratch), capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"dbt {' '.join(args)} failed:\n{done.stdout[-4000:]}\n{done.stderr[-2000:]}"
        return done

    def dbt_process(self, scratch: Path, *args: str) -> subprocess.Popen[str]:
        """`dbt ...` started and left running (its output in `scratch`/dbt.out): for runs at once.
        Each process needs its own `scratch` (dbt's target and log folders)."""
        return _started(_dbt_command(args), self.env(scratch), scratch / "dbt.out")

    def pipeline_env(self, scratch: Path) -> dict[str, str]:
        return {**self.env(scratch), "DBT_TARGET": "cluster", "PIPELINE_STATE_DIR": str(scratch / "state"),
                "PYTHONPATH": str(PROJECT_DIR / "scripts")}

    def pipeline(self, scratch: Path, *args: str) -> subprocess.CompletedProcess[str]:
        """`pipeline ...` as a user runs it with DBT_TARGET=cluster: a process without any JVM."""
        return subprocess.run(_pipeline_command(args), env=self.pipeline_env(scratch), capture_output=True, text=True,
                              timeout=1800)

    def pipeline_process(self, scratch: Path, *args: str) -> subprocess.Popen[str]:
        """`pipeline ...` started and left running (its output in `scratch`/pipeline.out)."""
        return _started(_pipeline_command(args), self.pipeline_env(scratch), scratch / "pipeline.out")

    def execute(self, sql: str) -> None:
        """A statement without a result set (DML, DDL): PyHive cannot fetch from those."""
        connection = hive.connect(host=self.info.thrift_host, port=self.info.thrift_port, username="dbt")
        try:
            connection.cursor().execute(sql)
        finally:
            connection.close()

    def query(self, sql: str) -> list[tuple]:
        connection = hive.connect(host=self.info.thrift_host, port=self.info.thrift_port, username="dbt")
        try:
            cursor = connection.cursor()
            cursor.execute(sql)
            return cursor.fetchall()
        finally:
            connection.close()



def _dbt_command(args: tuple[str, ...]) -> list[str]:
    return [str(DBT), *args, "--project-dir", str(PROJECT_DIR), "--profiles-dir", str(PROJECT_DIR / "profiles"),
            "--target", "cluster"]


def _pipeline_command(args: tuple[str, ...]) -> list[str]:
    return [sys.executable, "-m", "pipeline.cli", *args]


def _started(command: list[str], env: dict[str, str], output: Path) -> subprocess.Popen[str]:
    """A process left running, its output (both streams) written to `output`, which the
    process object carries as `output`."""
    output.parent.mkdir(parents=True, exist_ok=True)
    with output.open("w") as sink:
        process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)
    process.output = output
    return process


def ended(process: subprocess.Popen[str], timeout: float = 1800) -> tuple[int, str]:
    """A process `_started` left running, waited for: its exit code and what it printed."""
    return process.wait(timeout=timeout), process.output.read_text()


def running_cluster(state: Path) -> Iterator[Running]:
    """A cluster on free loopback ports with its files in `state`, stopped whatever happens."""
    try:
        started = time.monotonic()
        info = cluster.start(state, thrift_port=cluster.free_port(), timeout=300)
        yield Running(state, info, time.monotonic() - started)
    finally:
        cluster.stop(state)
