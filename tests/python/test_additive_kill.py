"""A daily run of a model maintained by deltas (the rides' agg_daily_city_trips) SIGKILLed at three
points, then run again: each change of the fact is applied to the aggregate once, whatever the
kill left (test_additive_deltas proves the deltas themselves).
1. as the aggregate starts: the fact's MERGE and change records committed, its run unrecorded;
2. as the aggregate's MERGE starts under its mark (killed within its statement, before the
   staged snapshot is made current);
3. after it was made current (data and mark on main), before the run's end hooks.
The runs are processes of their own on their own state folder (delta_kill_harness.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from test_backfill_kill import _env, _kill_on_log

HARNESS = Path(__file__).with_name("delta_kill_harness.py")

# minutes of JVMs of their own: the chaos tier (`pytest -m chaos`), as the backfill's kill test
pytestmark = pytest.mark.chaos


def _harness(env: dict[str, str], *args: str) -> dict | None:
    done = subprocess.run([sys.executable, str(HARNESS), *args], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    return json.loads(results[-1][len("RESULT "):]) if results else None


@pytest.mark.parametrize("kill_at", [
    r"Began running node model\.backfill_safe\.agg_daily_city_trips",
    r"set spark\.wap\.id = backfill_safe",
    r"publish_changes[\s\S]*?SQL status: OK",
], ids=["between-the-facts-commit-and-the-aggregates", "aggregate-merging-under-its-mark",
        "aggregate-published-run-not-ended"])
def test_a_daily_run_killed_around_the_aggregates_commit_applies_each_change_once(tmp_path: Path, kill_at: str):
    state = tmp_path / "state"
    env = _env(state)
    _harness(env, "setup")
    assert _harness(env, "verify")["mark"].startswith("backfill_safe.consumed|")
    for day in (2, 3):
        before = _harness(env, "verify")
        _harness(env, "land", str(day))
        _kill_on_log([sys.executable, str(HARNESS), "run"], env, state / "logs" / "dbt.log", kill_at)
        _harness(env, "run")
        after = _harness(env, "verify")
        assert after["equal"] and after["duplicates"] == 0, after
        assert after["mark"] != before["mark"], (before, after)  # the day's changes reached it
    # and a day with nothing killed after it: deltas again, still exact
    _harness(env, "land", "4")
    _harness(env, "run")
    last = _harness(env, "verify")
    assert last["equal"] and last["mark"].startswith("backfill_safe.consumed|"), last
