"""Two processes on one embedded warehouse: the second is refused at once, with a clear message,
before it writes anything or starts a JVM; a holder killed with SIGKILL leaves no lock behind.

(Embedded Derby admits one JVM per metastore: without the warehouse lock the second process
would die on Derby's own lock with an obscure error, or worse, half-way through.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import empty_warehouse, order, write_parquet

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
HOLD = ("import sys, time; from pathlib import Path; from pipeline.spark import lock_warehouse;"
        " lock_warehouse(Path(sys.argv[1])); print('held', flush=True); time.sleep(120)")
TRY = ("import sys; from pathlib import Path; from pipeline.spark import lock_warehouse, WarehouseBusy\n"
       "try:\n    lock_warehouse(Path(sys.argv[1]))\nexcept WarehouseBusy as error:\n"
       "    print(error); sys.exit(3)\nprint('acquired')")


def _env(**extra: str) -> dict[str, str]:
    """The subprocesses import this checkout's scripts/, as the test does (not whichever checkout
    the environment's editable install points at)."""
    path = os.pathsep.join(p for p in (str(SCRIPTS), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def _pipeline(state: Path, *args: str) -> subprocess.CompletedProcess:
    env = _env(PIPELINE_STATE_DIR=str(state), DBT_TARGET_PATH=str(state / "target-other"))
    return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("command", [
    ["land", "{file}"],
    ["backfill", "--start", "2025-01-01", "--end", "2025-01-03", "--reason", "concurrent", "--dry-run"],
    ["status"],
])
def test_a_second_process_on_the_embedded_warehouse_is_refused_before_it_writes(spark, state_dir: Path,
                                                                                tmp_path: Path, command):
    empty_warehouse(spark)
    file = write_parquet(tmp_path / "orders.parquet", "orders", [order(1, "2025-01-01 10:00")])
    done = _pipeline(state_dir, *[part.format(file=file) for part in command])
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"the embedded warehouse {state_dir} is in use by process {os.getpid()}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not spark.catalog.tableExists("raw.orders")  # nothing landed


@pytest.mark.fast
def test_a_killed_holder_leaves_no_lock(tmp_path: Path):
    state = tmp_path / "state"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(state)], stdout=subprocess.PIPE, text=True,
                              env=_env())
    try:
        assert holder.stdout.readline().strip() == "held"  # type: ignore[union-attr]
        busy = subprocess.run([sys.executable, "-c", TRY, str(state)], capture_output=True, text=True, timeout=60,
                              env=_env())
        assert busy.returncode == 3 and f"in use by process {holder.pid}" in busy.stdout, busy.stdout + busy.stderr
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=30)
    after = subprocess.run([sys.executable, "-c", TRY, str(state)], capture_output=True, text=True, timeout=60,
                           env=_env())
    assert after.returncode == 0 and after.stdout.strip() == "acquired", after.stdout + after.stderr
