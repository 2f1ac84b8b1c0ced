"""What the backfill_safe DAGs share: how a task runs the team's `pipeline` and `dbt` commands.

Airflow and the dbt project keep environments of their own: every task is a BashOperator that runs,
from the project's folder, the `pipeline` or `dbt` of the project's virtual environment, so
nothing here imports the framework, and a model added to the project needs no DAG edit. What a
task runs on is read when it runs, from Airflow Variables (or the environment variables
AIRFLOW_VAR_<NAME> that Airflow reads as Variables):

    backfill_safe_project_dir     the dbt project's folder (required)
    backfill_safe_venv            its virtual environment (default: <project>/.venv)
    backfill_safe_dbt_target      the profile's target, as DBT_TARGET (default: the profile's)
    backfill_safe_profiles_dir    the folder of profiles.yml, as DBT_PROFILES_DIR (default: dbt's)

and the DAGs' own, named in each. How often and how hard they run is read when Airflow parses
them, from the environment of its DAG processor:

    BACKFILL_SAFE_DAILY_SCHEDULE         the daily run's (default "0 1 * * *")
    BACKFILL_SAFE_RESTATEMENT_SCHEDULE   the restatement policy's, after the daily run (default "0 3 * * *")
    BACKFILL_SAFE_RETRIES                retries of a backfill's or a restatement's task (default 3)
    BACKFILL_SAFE_RETRY_DELAY_MINUTES    minutes between them (default 15)

A task fails on any exit code of its command but the ones it names: the exit codes are those of
docs/reference/cli.md, and the guide says which task maps which.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.providers.standard.operators.bash import BashOperator
from airflow.sdk import TriggerRule, task

START_DATE = datetime(2025, 1, 1)
TAGS = ["backfill_safe"]
DAILY_SCHEDULE = os.environ.get("BACKFILL_SAFE_DAILY_SCHEDULE", "0 1 * * *")
RESTATEMENT_SCHEDULE = os.environ.get("BACKFILL_SAFE_RESTATEMENT_SCHEDULE", "0 3 * * *")
# a backfill's task applied again resumes its run (pipeline apply): a retry is how a killed or
# paused backfill continues
RETRIES = int(os.environ.get("BACKFILL_SAFE_RETRIES", "3"))
RETRY_DELAY = timedelta(minutes=float(os.environ.get("BACKFILL_SAFE_RETRY_DELAY_MINUTES", "15")))

# the Variables a task reads, as environment variables of its bash (never spliced into its script)
SETTINGS = {
    "BACKFILL_SAFE_PROJECT_DIR": "{{ var.value.backfill_safe_project_dir }}",
    "BACKFILL_SAFE_VENV": "{{ var.value.get('backfill_safe_venv', '') }}",
    "BACKFILL_SAFE_DBT_TARGET": "{{ var.value.get('backfill_safe_dbt_target', '') }}",
    "BACKFILL_SAFE_PROFILES_DIR": "{{ var.value.get('backfill_safe_profiles_dir', '') }}",
}
# every task's script starts in the project's folder, with its environment's commands in $bin
PRELUDE = """\
cd "$BACKFILL_SAFE_PROJECT_DIR" || exit 1
bin="${BACKFILL_SAFE_VENV:-$PWD/.venv}/bin"
if [ -n "$BACKFILL_SAFE_DBT_TARGET" ]; then export DBT_TARGET="$BACKFILL_SAFE_DBT_TARGET"; fi
if [ -n "$BACKFILL_SAFE_PROFILES_DIR" ]; then export DBT_PROFILES_DIR="$BACKFILL_SAFE_PROFILES_DIR"; fi
"""


def bash(task_id: str, script: str, env: dict[str, str] | None = None, skip_on_exit_code=None, **kwargs):
    """A task that runs `script` in the project's folder. Its `env` values (templated: Variables,
    params, XComs) reach the script as environment variables; its exit code is the task's: 0
    success, `skip_on_exit_code` skipped, any other failed."""
    return BashOperator(
        task_id=task_id,
        bash_command=PRELUDE + script,
        env={**SETTINGS, **(env or {})},
        append_env=True,
        skip_on_exit_code=skip_on_exit_code,
        **kwargs,
    )


@task(trigger_rule=TriggerRule.ONE_FAILED, retries=0)
def failed_tasks() -> None:
    """The DAG run's verdict: it runs only when a task failed, and fails, so the run is failed
    even when a task after the failed one (the alerts, which run whatever happened) succeeded."""
    raise RuntimeError("a task of this run failed: see the failed task's log")
