"""A worker of a backfill's parallel windows: a process of its own that runs windows' `dbt run
--vars`, one after another, for the runner (Backfill, `--parallel N` on the cluster target),
which starts N of them.

dbt runs one invocation at a time in a process (its flags, its adapter and its invocation id
are the process's), so windows at once need processes. Each worker parses the project once
(a pinned manifest, as the runner's own windows do) into a target folder of its own
(DBT_TARGET_PATH, set by the runner), then reads jobs from its stdin, one JSON line each:
{"window": index, "models": [...], "vars": {...}}, and answers each on its stdout with one JSON
line: {"window", "ok", "started", "finished", "invocation_id", "error"}. dbt's own output goes
to stderr (the runner writes it to a log file), so nothing but the answers reaches stdout. It
ends when its stdin closes.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path


def main() -> int:
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # dbt prints to stdout: to the log with the rest
    from pipeline.dbt import Dbt, DbtError

    logs = os.environ.get("BACKFILL_WORKER_LOG_PATH")
    dbt = Dbt(quiet=True, log_path=Path(logs) if logs else None)
    with dbt.pinned_manifest():
        for line in sys.stdin:
            if not line.strip():
                continue
            job = json.loads(line)
            started = datetime.now(UTC)
            answer = {"window": job["window"], "ok": True, "error": None, "invocation_id": None}
            try:
                dbt.invoke(
                    "run",
                    "--no-write-json",
                    "--no-populate-cache",
                    "--select",
                    *job["models"],
                    "--vars",
                    json.dumps(job["vars"]),
                )
            except DbtError as error:
                answer.update(ok=False, error="; ".join(error.failures) or str(error))
            answer.update(
                invocation_id=Dbt.last_invocation_id(),
                started=started.isoformat(),
                finished=datetime.now(UTC).isoformat(),
            )
            answers.write(json.dumps(answer) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
