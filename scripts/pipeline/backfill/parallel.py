"""Windows at once (`--parallel N`, the cluster target only): which of a run's models may run
their windows at once (`split_parallel`), the worker processes that run them
(pipeline.backfill.worker, one dbt target each), and the dispatch of windows to them; the
models that may not run theirs one window at a time afterwards, in this process."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, cast

from pipeline import iceberg, paths
from pipeline.backfill import changes
from pipeline.backfill import plan as planning
from pipeline.backfill.scope import max_batch_days, partitioned_by_event_date
from pipeline.engine import Sql
from pipeline.manifest import IncrementalModel, incremental_models, models_read

if TYPE_CHECKING:
    from pipeline.backfill.execution import Outcome, Windows


@dataclass(frozen=True)
class Worker:
    """A worker process, the pipes of its jobs and answers, and the log of its output."""

    process: subprocess.Popen[str]
    stdin: IO[str]
    stdout: IO[str]
    log: Path


def max_parallel() -> int:
    """var backfill_max_parallel of the project (default 4): the most windows at once."""
    try:
        return int(paths.project_var("backfill_max_parallel"))  # type: ignore[call-overload]  # a yml value
    except KeyError:
        return 4


def check_parallel(parallel: int, embedded: bool) -> None:
    """--parallel N: between 1 and var backfill_max_parallel; above 1 only on a Spark cluster."""
    cap = max_parallel()
    if not 1 <= parallel <= cap:
        raise planning.PlanError(
            f"--parallel must be between 1 and {cap} (project var backfill_max_parallel), got {parallel}"
        )
    if parallel > 1 and embedded:
        raise planning.PlanError(
            f"--parallel {parallel}: the embedded target runs one dbt invocation at a time (one process holds its "
            "Spark session and Derby metastore), so its windows run one after another; windows at once need a "
            "Spark cluster (DBT_TARGET=cluster, docs/guides/cluster-mode.md). Drop --parallel"
        )


def split_parallel(
    models: list[IncrementalModel], partitioned: set[str], reads: dict[str, set[str]]
) -> tuple[list[str], dict[str, str]]:
    """Which of a run's models run their windows at once (`first`, in the order given) and
    which run theirs one at a time once those are done (`later`: name -> why). At once: a model
    whose table is partitioned by its event date (`partitioned`: a window writes its own dates'
    partitions), whose rows are its event date's (a model over models scoped by another key, a
    customer, reads rows of every date, which other windows are writing), and that reads
    (`reads`: name -> the models of the run it reads) no model run later."""
    later: dict[str, str] = {}
    for model in models:
        if model.name not in partitioned:
            later[model.name] = "its table is not partitioned by its event date"
        elif model.over_models and model.scope_key != model.event_date:
            later[model.name] = (
                f"its rows are scoped by {model.scope_key}, not by its event date {model.event_date}:"
                " a window reads rows of other windows' dates"
            )
    while True:
        blocked = {m.name: sorted(reads.get(m.name, set()) & set(later)) for m in models if m.name not in later}
        blocked = {name: upstream for name, upstream in blocked.items() if upstream}
        if not blocked:
            break
        later.update({name: f"it reads {upstream[0]}, which runs later" for name, upstream in blocked.items()})
    return [m.name for m in models if m.name not in later], later


def split_for(spark: Sql, model_names: list[str]) -> tuple[list[str], dict[str, str]]:
    """split_parallel for the models named, as the project declares them and their tables are."""
    models = [m for m in incremental_models() if m.name in set(model_names)]
    return split_parallel(
        models, {m.name for m in models if partitioned_by_event_date(spark, m)}, models_read([m.name for m in models])
    )


def run_at_once(
    run: Windows, todo: list[planning.Window], first: list[str], later: dict[str, str], cleanup: ExitStack
) -> Outcome:
    """The windows of `todo` at once, `run.parallel` at a time, for the models of `first`
    (split_for): each window's run in a worker process (pipeline.backfill.worker); a window
    refused by a concurrent commit runs again (Windows.after_conflict). Its figures are those
    of its own dates' partitions (changes.changes_in_dates). Then, when there are models of
    `later`, each window's run of those, one at a time, in this process. A pause request or
    not_during stops new windows from starting (the running ones finish and are recorded)."""
    from pipeline.backfill.execution import Outcome

    models = {m.name: m for m in incremental_models()}
    dated = {models[name].relation: cast(str, models[name].event_date) for name in first}  # partitioned by it
    limit = str(max(100, 4 * max_batch_days()))
    for table in dated:  # per-partition figures in each snapshot's summary
        run.spark.sql(
            f"alter table {iceberg.checked_table(table)} set tblproperties"
            f" ('write.summary.partition-limit' = '{limit}')"
        )
    states = {w.window_index: w for w in run.windows}
    loaded = {
        w.index: json.loads(states[w.index].table_stats or "{}") for w in todo if states[w.index].status == "loaded"
    }
    waiting = [w for w in todo if w.index not in loaded]
    run.console.print(
        f"{min(run.parallel, max(1, len(waiting)))} windows at once for {', '.join(first)}"
        + (
            "; then, one window at a time, " + "; ".join(f"{name} ({why})" for name, why in later.items())
            if later
            else ""
        )
    )
    outcome = Outcome()
    if waiting:
        outcome = _dispatch(run, waiting, first, later, dated, loaded, cleanup)
    if outcome.paused is not None or outcome.failed or not later:
        return outcome
    later_tables = [models[name].relation for name in later]
    for window in sorted((w for w in todo if w.index in loaded), key=lambda w: w.index):
        paused = run.pause_reason()
        if paused is not None:
            return Outcome(outcome.failed, paused, window)
        started = datetime.now(UTC)
        failure = run.run_window(list(later), window)
        if failure is not None:
            outcome.failed.append(run.window_failed(window, started, datetime.now(UTC), failure))
            continue
        finished = datetime.now(UTC)
        run.checkpoint(
            window,
            run.dbt.last_invocation_id(),
            started,
            finished,
            changes.changes(run.spark, later_tables, run.run_id, started, finished),
            loaded[window.index],
        )
    return Outcome(outcome.failed, None, None)


def _dispatch(
    run: Windows,
    waiting: list[planning.Window],
    first: list[str],
    later: dict[str, str],
    dated: dict[str, str],
    loaded: dict[int, dict],
    cleanup: ExitStack,
) -> Outcome:
    """The windows of `waiting` to the workers, as they become idle, until every one is done
    or the lane pauses the run; a window done is checkpointed (no `later` models), or recorded
    loaded (in `loaded`) for them."""
    from pipeline.backfill.execution import Outcome

    outcome = Outcome()
    workers = start_workers(run.run_id, min(run.parallel, len(waiting)), cleanup)
    answers: queue.Queue = queue.Queue()
    for n, worker in enumerate(workers):
        threading.Thread(
            target=_read_answers, args=(n, worker, answers), daemon=True, name=f"answers-{run.run_id}-{n}"
        ).start()
    idle = list(range(len(workers)))
    running: dict[int, planning.Window] = {}
    attempts: dict[int, int] = {}
    while waiting or running:
        while idle and waiting and outcome.paused is None:
            outcome.paused = run.pause_reason()
            if outcome.paused is not None:
                outcome.paused_before = waiting[0]
                break
            window = waiting.pop(0)
            if run.hooks.before_window is not None:
                run.hooks.before_window(window)
            n = idle.pop(0)
            workers[n].stdin.write(
                json.dumps(
                    {
                        "window": window.index,
                        "models": first,
                        "vars": {**window.dbt_vars, "backfill_branch": run.run_id},
                    }
                )
                + "\n"
            )
            workers[n].stdin.flush()
            running[n] = window
        if not running:
            break
        n, answer = answers.get()
        if answer is None and n not in running:  # a worker ended between windows: not used again
            idle.remove(n)
            if not idle and not running:
                raise RuntimeError(f"every backfill worker ended before its windows were done: see {workers[n].log}")
            continue
        window = running.pop(n)
        if answer is None:
            raise RuntimeError(
                f"backfill worker {n} ended while it ran window {window.index + 1}/{run.count} "
                f"{window.start} .. {window.end}: see {workers[n].log}"
            )
        idle.append(n)
        started, finished = datetime.fromisoformat(answer["started"]), datetime.fromisoformat(answer["finished"])
        if not answer["ok"]:
            failure = run.after_conflict(answer["error"] or "", window, attempts.get(window.index, 0))
            if failure is None:
                attempts[window.index] = attempts.get(window.index, 0) + 1
                waiting.insert(0, window)
                continue
            outcome.failed.append(run.window_failed(window, started, finished, failure))
            continue
        _window_done(run, window, answer, started, finished, first, later, dated, loaded)
    return outcome


def _window_done(
    run: Windows,
    window: planning.Window,
    answer: dict,
    started: datetime,
    finished: datetime,
    first: list[str],
    later: dict[str, str],
    dated: dict[str, str],
    loaded: dict[int, dict],
) -> None:
    """A worker's window done: checkpointed when no model runs later, else recorded loaded."""
    run.took.append((finished - started).total_seconds())
    stats = changes.changes_in_dates(run.spark, dated, run.run_id, window, started, finished)
    if not later:
        run.checkpoint(window, answer["invocation_id"], started, finished, stats)
        return
    run.control.window_loaded(run.run_id, window, started, finished, stats)
    run.control.record_window_runs(run.run_id, window, answer["invocation_id"], started, finished, stats)
    loaded[window.index] = stats
    run.console.print(
        f"window {window.index + 1}/{run.count} {window.start} .. {window.end}: "
        f"{', '.join(first)} done in {(finished - started).total_seconds():.1f} s"
    )


def _read_answers(n: int, worker: Worker, answers: queue.Queue) -> None:
    """A worker's answers (JSON lines on its stdout) into `answers` as (n, answer); (n, None)
    once it ends."""
    for line in worker.stdout:
        try:
            answers.put((n, json.loads(line)))
        except ValueError:
            continue
    answers.put((n, None))


def _stop_worker(worker: Worker) -> None:
    """A worker's stdin closed (it ends after its window), killed if it has not ended in 60 s."""
    try:
        worker.stdin.close()
    except OSError:
        pass
    try:
        worker.process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        worker.process.kill()
        worker.process.wait()


def start_workers(run_id: str, count: int, cleanup: ExitStack) -> list[Worker]:
    """`count` worker processes (pipeline.backfill.worker), each with its own dbt target and
    log folders and its output in a log file, under <state>/backfill_workers/<run>/; ended
    (their stdin closed, killed after 60 s) when `cleanup` closes."""
    folder = paths.state_dir() / "backfill_workers" / run_id
    package = str(Path(__file__).resolve().parents[2])  # what holds `pipeline`
    workers = []
    for n in range(count):
        home = folder / f"worker{n}"
        home.mkdir(parents=True, exist_ok=True)
        env = {
            **os.environ,
            "DBT_TARGET_PATH": str(home / "target"),
            "BACKFILL_WORKER_LOG_PATH": str(home / "logs"),
            "PYTHONPATH": os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH")) if p),
        }
        with (home / "worker.log").open("w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "pipeline.backfill.worker"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env=env,
                cwd=str(paths.PROJECT_DIR),
            )
        assert process.stdin is not None and process.stdout is not None  # both piped
        worker = Worker(process, process.stdin, process.stdout, home / "worker.log")
        cleanup.callback(_stop_worker, worker)
        workers.append(worker)
    return workers
