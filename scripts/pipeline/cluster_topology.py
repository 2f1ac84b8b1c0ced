"""Where a local cluster's work runs (pipeline.cluster starts it): the workers the master knows,
alive or not, and the executors of the Thrift Server's application, with the tasks each did; from
the master's, the workers' and the Thrift Server's web UIs (JSON)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from pipeline.cluster import ClusterError, ClusterInfo, cluster_dir, info


@dataclass(frozen=True)
class Worker:
    id: str
    host: str
    state: str  # ALIVE, DEAD, ...
    ui_url: str
    executors: tuple[tuple[str, str], ...]  # (application id, executor id) running on this worker


@dataclass(frozen=True)
class Executor:
    id: str
    host_port: str
    worker_id: str | None  # None when no worker reports it (not launched yet, or already gone)
    total_tasks: int
    completed_tasks: int


@dataclass(frozen=True)
class Topology:
    """The workers the master knows and the executors of the Thrift Server's application."""

    workers: tuple[Worker, ...]
    app_id: str
    executors: tuple[Executor, ...]

    @property
    def alive_workers(self) -> tuple[Worker, ...]:
        return tuple(w for w in self.workers if w.state == "ALIVE")

    def workers_with_tasks(self) -> set[str]:
        """Ids of the workers whose executors of the Thrift Server completed at least one task."""
        return {e.worker_id for e in self.executors if e.worker_id and e.completed_tasks > 0}


def _get_json(url: str) -> object:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def topology(state_dir: Path | None = None) -> Topology:
    """Ask the master (web UI /json/), each worker (/json/) and the Thrift Server's REST API
    (/api/v1/applications/<id>/executors) where the executors run and how many tasks they did."""
    state = info(state_dir)
    if state is None:
        raise ClusterError(f"no cluster runs from {cluster_dir(state_dir)}")
    master = _get_json(f"{state.master_ui_url}/json/")
    assert isinstance(master, dict)
    workers = []
    for worker in master["workers"]:
        executors: tuple[tuple[str, str], ...] = ()
        if worker["state"] == "ALIVE":
            detail = _get_json(f"{worker['webuiaddress']}/json/")
            assert isinstance(detail, dict)
            executors = tuple((e["appid"], str(e["id"])) for e in detail["executors"])
        workers.append(Worker(worker["id"], worker["host"], worker["state"], worker["webuiaddress"], executors))
    apps = _get_json(f"{state.thrift_ui_url}/api/v1/applications")
    assert isinstance(apps, list) and apps, apps
    app_id = apps[0]["id"]
    where = {(app, executor): w.id for w in workers for app, executor in w.executors}
    listed = _get_json(f"{state.thrift_ui_url}/api/v1/applications/{app_id}/executors")
    assert isinstance(listed, list)
    running = tuple(
        Executor(e["id"], e["hostPort"], where.get((app_id, e["id"])), e["totalTasks"], e["completedTasks"])
        for e in listed
        if e["id"] != "driver"
    )
    return Topology(tuple(workers), app_id, running)


def alive_worker_ids(state: ClusterInfo) -> list[str]:
    try:
        master = _get_json(f"{state.master_ui_url}/json/")
    except (OSError, urllib.error.URLError, ValueError):
        return []
    assert isinstance(master, dict)
    return [w["id"] for w in master.get("workers", []) if w.get("state") == "ALIVE"]
