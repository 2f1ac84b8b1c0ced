"""Fault injection in the suite: a short run of the harness (`python -m harness.chaos`, whose
default is 24 kill points): daily runs and backfills SIGKILLed at seeded points, each recovered
and verified against the full refresh. The harness runs its processes on a state folder of its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.chaos
def test_daily_runs_and_backfills_killed_at_seeded_points_recover_without_losing_or_duplicating_rows(tmp_path: Path):
    out = tmp_path / "chaos.json"
    done = subprocess.run([sys.executable, "-m", "harness.chaos", "--kills", "4", "--seed", "3",
                           "--orders-per-day", "10", "--state", str(tmp_path / "state"), "--out", str(out)],
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    totals = json.loads(out.read_text())["totals"]
    assert totals["kill_points"] == 4 and totals["recoveries_verified"] == 4, done.stdout
    assert totals["kills"] >= 2, done.stdout  # the others finished before their kill point
    assert (totals["rows_lost"], totals["rows_duplicated"]) == (0, 0), done.stdout
    assert (totals["watermarks_above_landed"], totals["backfills_left_running"]) == (0, 0), done.stdout
