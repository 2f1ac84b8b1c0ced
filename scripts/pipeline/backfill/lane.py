"""The fresh data's lane: a running backfill gives the warehouse back to the daily run at a
window boundary, when the daily run asks (`pipeline backfill --pause`: a request file in the
state folder) or before a window that would run into a time of day kept clear (`--not-during`,
var backfill_not_during)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from pipeline import paths, spark
from pipeline.backfill.plan import DailySpan


def pause_request_path() -> Path:
    """The file `pipeline backfill --pause` leaves for a running backfill of this state folder:
    it pauses at its next window boundary and takes the file."""
    return paths.state_dir() / "backfill.pause"


def request_pause(by: str) -> Path:
    path = pause_request_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{by} at {datetime.now().astimezone():%Y-%m-%d %H:%M:%S %Z}")
    return path


def wait_for_warehouse(seconds: float, poll: float = 2.0) -> str | None:
    """Wait until no process holds the embedded warehouse (a backfill asked to pause has paused
    and exited, or ended), at most `seconds`: None once it is free, else who still holds it."""
    deadline = time.monotonic() + seconds
    while (held := spark.holder()) is not None:
        if time.monotonic() >= deadline:
            return held
        time.sleep(min(poll, max(deadline - time.monotonic(), 0.1)))
    return None


def pause_reason(
    began: float, not_during: DailySpan | None, clock: Callable[[], datetime], window_seconds: float
) -> str | None:
    """Why the next window must not start now, or None: the daily run asked for the warehouse
    (a request file newer than `began`, this run's start, taken here), or the window, as long as
    the longest so far (`window_seconds`), would run into `not_during` by `clock`."""
    request = pause_request_path()
    try:
        asked_at = request.stat().st_mtime
    except FileNotFoundError:
        asked_at = None
    if asked_at is not None:
        asked = request.read_text(errors="replace").strip()[:200]
        request.unlink(missing_ok=True)
        # a request older than this process's start was meant for a run that has ended since
        if asked_at >= began:
            return f"the fresh data asked for the warehouse ({asked or 'pipeline backfill --pause'})"
    if not_during is not None:
        now = clock()
        reopens = not_during.meets(now, window_seconds)
        if reopens is not None:
            return (
                f"the next window (about {window_seconds:.0f} s) would run into not_during "
                f"{not_during} (local time); resume after {reopens:%H:%M}"
            )
    return None
