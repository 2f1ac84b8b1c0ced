"""The framework's Airflow DAGs run in a real Airflow 3 (installed from the package registry into an
environment of its own, its metadata database SQLite) against a team's project that installed the
framework by pip (tests/consumer_project, as test_package_install.py sets it up), with the commands
of docs/guides/orchestrate-with-airflow.md: the daily DAG over two landed days and a day with
nothing new, the restatement DAG, and the backfill DAG over a damaged date, its `apply` task
killed mid-run and retried by Airflow. After each, the team's models equal a full refresh
(`pipeline compare`). Airflow and the project never share a process: every step is a command."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from test_package_install import AGENT_COLUMNS, AGENTS_1, AGENTS_2, AGENTS_3, COLUMNS, DAY_1, DAY_2, _installed_project

from pipeline.paths import FRAMEWORK_DIR

pytestmark = pytest.mark.extended  # an Airflow and a team's project, each in an environment of its own
GUIDE = FRAMEWORK_DIR / "docs" / "guides" / "orchestrate-with-airflow.md"
MODELS = ("fct_ticket", "ticket_assignments")


def guide_block(heading: str) -> str:
    """The first bash block of the guide's section `heading`."""
    section = GUIDE.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


class Airflow:
    """The guide's Airflow, installed under `home` for the team's project, landing from `landing`."""

    def __init__(self, home: Path, project: Path, landing: Path, env: dict[str, str]):
        self.home, self.project, self.landing = home, project, landing
        self.venv = home / "venv"
        self.env = {**env, "AIRFLOW_HOME": str(home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                    # a retry within seconds, not the default 15 minutes
                    "BACKFILL_SAFE_RETRY_DELAY_MINUTES": "0.05"}

    def paths(self, text: str) -> str:
        for example, here in (("/opt/airflow/venv", self.venv), ("/opt/airflow", self.home),
                              ("/srv/analytics", self.project), ("/srv/landing", self.landing),
                              ("python3.11", sys.executable)):
            text = text.replace(example, str(here))
        return text

    def install(self) -> None:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", self.paths(guide_block("1. Install"))],
                              env=self.env, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    def dags_test(self, dag_id: str, conf: str | None = None, logical_date: str | None = None) -> list[str]:
        """The guide's `airflow dags test` of `dag_id` (its --conf given as the guide gives it)."""
        [line] = [line for line in guide_block("4. Run").splitlines() if f"dags test {dag_id}" in line]
        args = self.paths(line).split()[:4]
        return [*args, *([logical_date] if logical_date else []), *(["--conf", conf] if conf else [])]

    def run(self, command: list[str], timeout: int = 1800) -> subprocess.CompletedProcess:
        return subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=timeout)

    def api_server(self) -> tuple[subprocess.Popen, str]:
        """Airflow's api-server on this home (a user `ana`, admin, with a password file of her
        own): where a human answers a Required Action. Its base URL once it answers."""
        (self.home / "passwords.json").write_text(json.dumps({"ana": "an approver's password"}))
        self.env.update(AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS="ana:admin",
                        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(self.home / "passwords.json"))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        server = subprocess.Popen([str(self.venv / "bin" / "airflow"), "api-server", "--port", str(port)],
                                  env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and server.poll() is None:
            try:
                urllib.request.urlopen(f"{url}/api/v2/version", timeout=5)
                return server, url
            except OSError:
                time.sleep(2)
        server.kill()
        raise AssertionError(f"the api-server never answered (exit {server.poll()})")

    def respond(self, url: str, dag_id: str, task_id: str, answer: dict, dag_test: subprocess.Popen) -> dict:
        """Ana answers the task's Required Action through the api-server's REST API, as the
        guide shows, once the task awaits it (while `dag_test`, the DAG's run, goes on)."""
        deadline = time.monotonic() + 1200
        while time.monotonic() < deadline and dag_test.poll() is None:
            with sqlite3.connect(self.home / "airflow.db") as db:
                waiting = db.execute("select run_id from task_instance where dag_id = ? and task_id = ? and "
                                     "state = 'awaiting_input'", (dag_id, task_id)).fetchone()
            if waiting:
                break
            time.sleep(1)
        else:
            raise AssertionError(f"{dag_id}.{task_id} never awaited input (its run's exit: {dag_test.poll()})")

        def call(method: str, path: str, body: dict, token: str | None = None) -> dict:
            request = urllib.request.Request(f"{url}{path}", method=method, data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json",
                                                      **({"Authorization": f"Bearer {token}"} if token else {})})
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.load(response)

        token = call("POST", "/auth/token", {"username": "ana", "password": "an approver's password"})["access_token"]
        return call("PATCH", f"/api/v2/dags/{dag_id}/dagRuns/{waiting[0]}/taskInstances/{task_id}/-1/hitlDetails",
                    answer, token)

    def last_run(self, dag_id: str) -> dict[str, tuple[str, int]]:
        """Each task of the DAG's last run: its state and its try number, from Airflow's database."""
        with sqlite3.connect(self.home / "airflow.db") as db:
            [run_id] = db.execute("select run_id from dag_run where dag_id = ? order by id desc limit 1",
                                  (dag_id,)).fetchone()
            return {task: (state, tries) for task, state, tries in db.execute(
                "select task_id, state, try_number from task_instance where dag_id = ? and run_id = ?",
                (dag_id, run_id))}


def project_query(airflow: Airflow, sql: str) -> list[list]:
    """Rows of a query on the team's warehouse, from a process of the project's environment."""
    done = subprocess.run(
        [".venv/bin/python", "-c", "import json, sys; from pipeline.engine import get_engine; print(json.dumps("
         "[list(r) for r in get_engine().sql(sys.argv[1]).collect()], default=str))", sql],
        cwd=airflow.project, env=airflow.env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def project_command(airflow: Airflow, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([".venv/bin/pipeline", *args], cwd=airflow.project, env=airflow.env,
                          capture_output=True, text=True, timeout=900)


def assert_equal_to_a_full_refresh(airflow: Airflow, when: str) -> None:
    for model in MODELS:
        compared = project_command(airflow, "compare", model)
        assert compared.returncode == 0, (when, model, compared.stdout[-3000:] + compared.stderr[-2000:])


def write_day(landing: Path, day: str, files: dict[str, tuple[str, list[str]]]) -> None:
    (landing / day).mkdir(parents=True)
    for name, (columns, lines) in files.items():
        (landing / day / name).write_text("\n".join([columns, *lines]) + "\n")


def kill_apply_once_a_window_is_done(airflow: Airflow, proc: subprocess.Popen, log: Path) -> str:
    """SIGKILL the `pipeline apply` the backfill DAG's task runs, once its log shows window 2
    done (window 3 starting); the task's bash exits 137, and Airflow retries it."""
    deadline = time.monotonic() + 1800
    while time.monotonic() < deadline and proc.poll() is None:
        text = log.read_text(errors="replace") if log.exists() else ""
        if re.search(r"window 2/\d+ \S+ \.\. \S+ done", text):
            applies = [pid for pid in os.listdir("/proc") if pid.isdigit() and _is_apply(pid, airflow.project)]
            assert len(applies) == 1, applies
            os.kill(int(applies[0]), signal.SIGKILL)
            return text
        time.sleep(0.5)
    raise AssertionError(f"the apply task never showed window 2 done (dags test exit {proc.poll()})")


def _is_apply(pid: str, project: Path) -> bool:
    """Whether the process is a `pipeline apply` run from the team's project (not another test's)."""
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return False
    return any(w.endswith(b"/pipeline") for w in words) and b"apply" in words and cwd == project.resolve()


def test_the_dags_run_the_daily_run_a_restatement_and_a_killed_backfill_in_a_real_airflow(tmp_path: Path):
    project, env = _installed_project(tmp_path)
    landing = tmp_path / "landing"
    landing.mkdir()
    airflow = Airflow(tmp_path / "airflow", project, landing, env)
    airflow.install()
    outputs: list[str] = []

    def dags_test(dag_id: str, conf: str | None = None, expect: int = 0) -> dict[str, tuple[str, int]]:
        done = airflow.run(airflow.dags_test(dag_id, conf))
        outputs.append(done.stdout + done.stderr)
        assert done.returncode == expect, (dag_id, done.stdout[-6000:] + done.stderr[-6000:])
        return airflow.last_run(dag_id)

    # day 1: landed, built, no alert
    write_day(landing, "2025-03-05", {"tickets.csv": (COLUMNS, DAY_1), "agents.csv": (AGENT_COLUMNS, AGENTS_1)})
    daily = dags_test("backfill_safe_daily")
    assert {t: s for t, (s, _) in daily.items()} == {
        "clear_the_lane": "success", "land": "success", "build": "success", "alerts": "success",
        "failed_tasks": "skipped"}, daily
    assert_equal_to_a_full_refresh(airflow, "day 1")

    # day 2: late corrections, a delete, a duplicate, a stale version, an agent's rename
    write_day(landing, "2025-03-06", {"tickets-2.csv": (COLUMNS, DAY_2), "agents-2.csv": (AGENT_COLUMNS, AGENTS_2)})
    daily = dags_test("backfill_safe_daily")
    assert daily["land"][0] == daily["build"][0] == "success", daily
    assert_equal_to_a_full_refresh(airflow, "day 2")

    # nothing new arrived: the landing and the build skipped, the alerts still checked, the run green
    daily = dags_test("backfill_safe_daily")
    assert {t: s for t, (s, _) in daily.items()} == {
        "clear_the_lane": "success", "land": "skipped", "build": "skipped", "alerts": "success",
        "failed_tasks": "skipped"}, daily

    # day 3: an agent's rename dated before the mart's window: the daily run misses it (its audit
    # names the tickets), the restatement DAG restates it; nothing is held, so no sign-off step runs
    write_day(landing, "2025-03-07", {"agents-3.csv": (AGENT_COLUMNS, AGENTS_3)})
    daily = dags_test("backfill_safe_daily", expect=1)
    assert daily["build"][0] == "failed" and daily["alerts"][0] in ("success", "failed"), daily
    assert daily["failed_tasks"][0] == "failed", daily
    restatement = dags_test("backfill_safe_restatement")
    assert {t: s for t, (s, _) in restatement.items()} == {
        "restate": "success", "any_held": "success", "review": "skipped", "approve": "skipped",
        "signoff": "skipped", "restate_signed": "skipped", "failed_tasks": "skipped"}, restatement
    assert_equal_to_a_full_refresh(airflow, "restated")

    # a bad deploy damages one date of the fact; the backfill DAG repairs it, its apply task
    # killed after two of its seven windows and retried by Airflow: resumed, published once
    damage = subprocess.run(
        [".venv/bin/python", "-c", "from pipeline.engine import get_engine; get_engine().sql("
         "\"update analytics_marts.fct_ticket set amount = amount + 1 where opened_date = date'2025-03-02'\")"],
        cwd=project, env=airflow.env, capture_output=True, text=True, timeout=600)
    assert damage.returncode == 0, damage.stderr[-3000:]
    assert project_command(airflow, "compare", "fct_ticket").returncode == 1  # the damage is seen
    conf = ('{"select": "fct_ticket", "start": "2025-03-01", "end": "2025-03-08", "batch_days": 1, '
            '"reason": "a bad deploy", "require_approval": false}')
    log = tmp_path / "backfill_dag.log"
    with log.open("w") as out:
        proc = subprocess.Popen(airflow.dags_test("backfill_safe_backfill", conf), env=airflow.env,
                                stdout=out, stderr=subprocess.STDOUT, text=True)
        try:
            kill_apply_once_a_window_is_done(airflow, proc, log)
            proc.wait(timeout=1800)
        finally:
            if proc.poll() is None:
                proc.kill()
    output = log.read_text(errors="replace")
    assert proc.returncode == 0, output[-8000:]
    backfill = airflow.last_run("backfill_safe_backfill")
    assert backfill == {"plan": ("success", 1), "needs_approval": ("success", 1), "approve": ("skipped", 0),
                        "apply": ("success", 2), "failed_tasks": ("skipped", 0)}, backfill
    # the retry resumed the run the plan started: windows 1 and 2 were not run again
    assert re.search(r"resum", output), output[-8000:]
    assert_equal_to_a_full_refresh(airflow, "backfilled")
    runs = project_query(airflow, "select status, reason from control.backfill_runs order by created_at")
    assert [r for r in runs if r[1] == "a bad deploy"] == [["published", "a bad deploy"]], runs

    # a ticket opened months ago lands now, beyond its model's restatement window (90 days): the
    # daily run misses it, the restatement DAG holds it, and a human approves its restatement
    write_day(landing, "2025-03-08", {"tickets-4.csv": (COLUMNS, ["8,tech,11,2024-11-01 09:00:00,80.00,"
                                                                  "2024-11-01 09:00:00,false"])})
    daily = dags_test("backfill_safe_daily", expect=1)
    # its build passes; its alerts task fails, naming the model's data test that sees the key
    assert daily["build"][0] == "success" and daily["alerts"][0] == "failed", daily
    assert re.search(r"alert: data test \S*fct_ticket", outputs[-1]), outputs[-1][-6000:]
    server, url = airflow.api_server()
    try:
        log = tmp_path / "restatement_dag.log"
        with log.open("w") as out:
            proc = subprocess.Popen(airflow.dags_test("backfill_safe_restatement"), env=airflow.env,
                                    stdout=out, stderr=subprocess.STDOUT, text=True)
            try:
                answered = airflow.respond(url, "backfill_safe_restatement", "approve",
                                           {"chosen_options": ["Approve"],
                                            "params_input": {"reason": "an old ticket, approved by support"}},
                                           proc)
                proc.wait(timeout=1800)
            finally:
                if proc.poll() is None:
                    proc.kill()
    finally:
        server.kill()
        server.wait()
    output = log.read_text(errors="replace")
    assert proc.returncode == 0, output[-8000:]
    assert answered["responded_by"]["name"] == "ana", answered
    restatement = airflow.last_run("backfill_safe_restatement")
    assert {t: s for t, (s, _) in restatement.items()} == {
        "restate": "success", "any_held": "success", "review": "success", "approve": "success",
        "signoff": "success", "restate_signed": "success", "failed_tasks": "skipped"}, restatement
    assert project_query(airflow, "select signed_by, reason from control.restatement_signoffs") == [
        ["ana", "an old ticket, approved by support"]]
    assert project_query(airflow, "select amount from analytics_marts.fct_ticket where ticket_id = 8") == [["80.00"]]
    assert_equal_to_a_full_refresh(airflow, "signed off and restated")
