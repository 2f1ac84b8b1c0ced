"""A backfill killed with SIGKILL, once between windows and once inside one, then resumed.

The backfill runs in processes of its own (kill_harness.py) on their own state folder: the
test session's embedded metastore admits no second JVM. No cleanup code of the runner gets to
run: what is left is what a crash leaves.
1. `backfill` is killed as soon as it reports window 1 checkpointed (window 2 just starting);
2. `pipeline backfill --resume` is killed as soon as dbt reports window 2's first MERGE done
   on the branch (its second model running, its checkpoint not written);
3. a second `--resume` must take the lock over at once (its owner's process is gone), finish,
   pass the gate, publish, and leave both facts equal to the full refresh, keys unique.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HARNESS = Path(__file__).with_name("kill_harness.py")
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
TIMEOUT_S = 600

# a kill test, like the fault-injection harness's: minutes of JVMs of its own, so it runs in the
# chaos tier (`pytest -m chaos`), out of the suite CI runs (docs/guides/run-the-tests.md)
pytestmark = pytest.mark.chaos


def _env(state: Path) -> dict[str, str]:
    # a dbt target folder of its own: the test session's in-process dbt owns the project's target/;
    # `python -m pipeline.cli` imports this checkout's scripts/, as the harness and the test do
    # (not whichever checkout the environment's editable install points at)
    path = os.pathsep.join(p for p in (str(SCRIPTS), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PIPELINE_STATE_DIR": str(state), "DBT_TARGET_PATH": str(state.parent / "target"),
            "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}


def _kill_on_line(command: list[str], env: dict[str, str], pattern: str) -> tuple[str, str]:
    """Run `command`, SIGKILL it on the first output line matching `pattern`; (that line, all output)."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, hit = [], ""
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            if re.search(pattern, line):
                proc.send_signal(signal.SIGKILL)
                hit = line
                break
    finally:
        if proc.poll() is None and not hit:
            proc.kill()
        proc.wait(timeout=60)
    output = "".join(lines)
    assert hit, f"never saw {pattern!r}; output:\n{output[-4000:]}"
    assert proc.returncode == -signal.SIGKILL, output[-4000:]
    return hit, output


def _kill_on_log(command: list[str], env: dict[str, str], log: Path, pattern: str) -> None:
    """Run `command`, SIGKILL it once dbt's log file gets a line matching `pattern`."""
    offset = log.stat().st_size if log.exists() else 0
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + TIMEOUT_S
    killed = False
    try:
        while not killed and time.monotonic() < deadline and proc.poll() is None:
            if log.exists():
                with log.open(errors="replace") as handle:
                    handle.seek(offset)
                    if re.search(pattern, handle.read()):
                        proc.send_signal(signal.SIGKILL)
                        killed = True
            time.sleep(0.05)
    finally:
        if not killed and proc.poll() is None:
            proc.kill()
        proc.wait(timeout=60)
    assert killed, f"the process ended (exit {proc.returncode}) or timed out before its log showed {pattern!r}"
    assert proc.returncode == -signal.SIGKILL


def test_a_backfill_killed_between_and_inside_windows_resumes_to_the_full_refresh(tmp_path: Path):
    env = _env(tmp_path / "state")
    python = sys.executable

    # 1. killed between windows: right after window 1's checkpoint
    _, output = _kill_on_line([python, str(HARNESS), "backfill"], env, r"window 1/3 \S+ \.\. \S+ done")
    run_id = re.search(r"backfill (bf_\d{8}_\d{6}_[0-9a-f]{6}): 3 windows", output).group(1)
    assert not re.search(r"^fct_orders?$", output, re.M), "dbt ls printed the selection to the CLI's output"

    # 2. killed inside window 2: one of its two MERGEs committed to the branch, no checkpoint
    _kill_on_log([python, "-m", "pipeline.cli", "backfill", "--resume", run_id], env,
                 tmp_path / "state" / "logs" / "dbt.log", r"OK created sql (?:incremental|backfill_safe) model marts\.")

    # 3. resumed at once (the owner process is gone), to the end
    done = subprocess.run([python, str(HARNESS), "resume-and-verify", run_id], env=env, capture_output=True,
                          text=True, timeout=TIMEOUT_S)
    reports = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and reports, done.stdout[-4000:] + done.stderr[-4000:]
    result = json.loads(reports[-1].removeprefix("RESULT "))

    before, after = result["before"], result["after"]
    assert before["status"] == "running" and before["active_runs"] == [run_id]  # the lock a kill leaves
    assert before["windows"] == ["done", "pending", "pending"]  # window 2 was never checkpointed
    assert after["exit_code"] == 0 and after["status"] == "published"
    assert after["windows"] == ["done", "done", "done"]
    assert after["active_runs"] == []
    for table in ("marts.fct_order_item", "marts.fct_orders"):
        assert after[table]["rows"] > 0, table
        assert after[table]["equals_full_refresh"], table
        assert after[table]["duplicate_keys"] == 0, table
