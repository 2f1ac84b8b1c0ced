"""Fault injection in the chaos tier: a short run of the harness (`python -m harness.chaos`, whose
default is 24 kill points): daily runs, backfills, restatements and maintenance SIGKILLed at
seeded points, one of each kill class (after a daily run's statement, after a backfill's, within
a landing, within a publish, within maintenance, after a restatement's statement, within the run
of an aggregate maintained by deltas), each recovered and verified against the full refresh and
the landing log. The harness runs its
processes on a state folder of its own; once per example domain (the shop, rides)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.chaos
@pytest.mark.parametrize("domain", ["shop", "rides"])
def test_runs_landings_backfills_publishes_maintenance_and_restatements_killed_recover_losing_and_doubling_nothing(
        tmp_path: Path, domain: str):
    out = tmp_path / "chaos.json"
    done = subprocess.run([sys.executable, "-m", "harness.chaos", "--domain", domain, "--kills", "7", "--seed", "3",
                           "--orders-per-day", "10", "--state", str(tmp_path / "state"), "--out", str(out)],
                          env={**os.environ, "PYTHONUNBUFFERED": "1"}, capture_output=True, text=True, timeout=2700)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    totals = json.loads(out.read_text())["totals"]
    assert totals["kill_points"] == 7 and totals["recoveries_verified"] == 7, done.stdout
    assert totals["kills"] >= 3, done.stdout  # the others finished before their kill point
    results = json.loads(out.read_text())["results"]
    assert [r["class"] for r in results] == ["daily", "backfill", "landing", "publish", "maintain", "restate", "deltas"]
    # the aggregate killed in is the domain's model maintained by deltas, found from its declaration
    assert results[-1]["node"] == {"shop": "agg_customer_orders", "rides": "agg_daily_city_trips"}[domain]
    assert (totals["rows_lost"], totals["rows_duplicated"]) == (0, 0), done.stdout
    assert (totals["watermarks_above_landed"], totals["backfills_left_running"]) == (0, 0), done.stdout
    assert totals["files_not_landed_once"] == 0 and totals["aggregate_rows_differing"] == 0, done.stdout
    assert totals["aggregates_checked"] >= 1, done.stdout  # after the recovered daily runs
