"""The lock a running backfill holds on its models: its owner (host:pid), the heartbeat a thread
writes while windows run, and when a lock is stale (its owner gone, or its heartbeat old), so
that another run may take the models over (`resume`) or must wait."""

from __future__ import annotations

import os
import socket
import threading
from datetime import timedelta

from pipeline.backfill.control import Control, Run
from pipeline.backfill.plan import BackfillRefused
from pipeline.engine import Sql


def this_owner() -> str:
    """This process as a lock's owner: host:pid."""
    return f"{socket.gethostname()}:{os.getpid()}"


class Heartbeat:
    """Writes the run's heartbeat every `every` seconds from a daemon thread until stopped.

    A failed beat is retried at the next one (the lock only goes stale after several misses).
    Control serialises its writes to backfill_runs, so a beat never races the run's own status
    updates into an Iceberg commit conflict."""

    def __init__(self, control: Control, run_id: str, owner: str, every: float) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, args=(control, run_id, owner, every), name=f"heartbeat-{run_id}", daemon=True
        )

    def _beat(self, control: Control, run_id: str, owner: str, every: float) -> None:
        while not self._stop.wait(every):
            try:
                control.heartbeat(run_id, owner)
            except Exception:  # noqa: BLE001 - a missed beat is retried; staleness needs several
                pass

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


def owner_gone(owner: str) -> bool:
    """True if `owner` (host:pid) is a process of this host that no longer runs."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit() or int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def stale(spark: Sql, run: Run, stale_after: timedelta) -> bool:
    """The lock's owner is gone: its process no longer exists on this host, or its heartbeat
    is older than stale_after (judged by the engine's clock, the one that wrote it)."""
    if owner_gone(run.owner):
        return True
    return bool(
        spark.sql(
            "select heartbeat_at < current_timestamp() - make_dt_interval(0, 0, 0, :seconds) from control.backfill_runs"
            " where run_id = :run_id",
            args={"seconds": stale_after.total_seconds(), "run_id": run.run_id},
        ).collect()[0][0]
    )


def refuse_overlap(
    spark: Sql, control: Control, models: list[str], stale_after: timedelta, except_run: str | None = None
) -> None:
    """Refused when another active run (not `except_run`) holds any of `models`: paused, with
    its owner gone, or running; the message says how to finish or release it."""
    for run in control.active_runs():
        overlap = sorted(set(run.models) & set(models))
        if run.run_id == except_run or not overlap:
            continue
        if run.status == "paused":
            raise BackfillRefused(
                f"run {run.run_id} holds {', '.join(overlap)}, paused ({run.message}): "
                f"`pipeline backfill --resume {run.run_id}` to finish it or `pipeline backfill --abandon "
                f"{run.run_id}` to release it"
            )
        if stale(spark, run, stale_after):
            raise BackfillRefused(
                f"run {run.run_id} still holds {', '.join(overlap)} but its owner {run.owner} is gone (last heartbeat "
                f"{run.heartbeat_at}): `pipeline backfill --resume {run.run_id}` "
                f"to finish it or `pipeline backfill --abandon {run.run_id}` to release it"
            )
        raise BackfillRefused(f"run {run.run_id} ({run.owner}) is backfilling {', '.join(overlap)}; wait for it")
