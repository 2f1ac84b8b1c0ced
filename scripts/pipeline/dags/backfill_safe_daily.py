"""The daily run of a backfill_safe project: the lane cleared, what arrived landed, `dbt build`,
then the alerts.

    clear_the_lane  `pipeline backfill --pause --wait S`: a running backfill pauses at its next
                    window boundary and gives the warehouse back (it resumes later, on its own
                    task's retry); fails if it still holds the warehouse after S seconds
    land            `pipeline land --nothing-new-exit 99 LANDING`: the files of the landing folder
                    not landed yet; skipped when none is new, and then the build is too
    build           `dbt build`: the models (the framework's kind processes what changed) and
                    their tests
    alerts          `pipeline report --fail-on-alerts`: the status page, and failed when an alert
                    fires (a failed run, a stale source, a failing alert test, late rows, drift);
                    runs whatever happened before it
    failed_tasks    fails the run when any task failed

Variables (beside those of backfill_safe_tasks.py): backfill_safe_landing_dir, the folder files
arrive in, day folders or files (unset: the sources arrive otherwise, nothing is landed and the
build always runs); backfill_safe_pause_wait_seconds (default 3600); backfill_safe_build_args,
words added to `dbt build` (a selector: `--select tag:daily`). docs/guides/orchestrate-with-airflow.md.
"""

from __future__ import annotations

from airflow.sdk import DAG, TriggerRule
from backfill_safe_tasks import DAILY_SCHEDULE, START_DATE, TAGS, bash, failed_tasks

with DAG(
    dag_id="backfill_safe_daily",
    schedule=DAILY_SCHEDULE,
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    tags=TAGS,
    doc_md=__doc__,
):
    clear_the_lane = bash(
        "clear_the_lane",
        '"$bin/pipeline" backfill --pause --wait "$WAIT_SECONDS"',
        env={"WAIT_SECONDS": "{{ var.value.get('backfill_safe_pause_wait_seconds', '3600') }}"},
    )
    land = bash(
        "land",
        'if [ -z "$LANDING_DIR" ]; then\n'
        '  echo "no landing folder (Variable backfill_safe_landing_dir): the sources arrive otherwise"\n'
        "  exit 0\n"
        "fi\n"
        'exec "$bin/pipeline" land --nothing-new-exit 99 "$LANDING_DIR"',
        env={"LANDING_DIR": "{{ var.value.get('backfill_safe_landing_dir', '') }}"},
        skip_on_exit_code=99,
    )
    # $BUILD_ARGS unquoted on purpose: the Variable holds dbt's words (--select tag:daily)
    build = bash(
        "build",
        'exec "$bin/dbt" build $BUILD_ARGS',
        env={"BUILD_ARGS": "{{ var.value.get('backfill_safe_build_args', '') }}"},
    )
    alerts = bash("alerts", 'exec "$bin/pipeline" report --fail-on-alerts', trigger_rule=TriggerRule.ALL_DONE)
    clear_the_lane >> land >> build >> alerts
    [clear_the_lane, land, build, alerts] >> failed_tasks()
