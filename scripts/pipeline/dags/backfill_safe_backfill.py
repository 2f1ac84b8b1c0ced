"""A backfill of a backfill_safe project, triggered with its parameters: planned, approved,
applied exactly as planned.

    plan            `pipeline backfill --select M --start S --end E --batch-days B --reason R
                    --plan-out PLAN`: the plan (windows, models, code and data it was made on,
                    the cost per window), written to the plans folder and printed in the log
    needs_approval  the approval step when the run's require_approval is true
    approve         a human approves or rejects the plan (Airflow's Required Actions); a
                    rejection skips the apply
    apply           `pipeline apply PLAN`: that plan and nothing else (refused when the code or
                    the scope changed since), on Iceberg branches, the gate, one publish, the
                    models downstream checked. Retried (BACKFILL_SAFE_RETRIES): a retry applies the
                    plan again, which resumes its run (its windows not done, then gate and
                    publish) and never publishes twice; exit 5 (paused for the daily run) is
                    retried so. 4 (published, something downstream failed) fails the task.
    failed_tasks    fails the run when any task failed

Params: select, start, end, batch_days, reason, require_approval, rebuild_downstream. Variable
backfill_safe_plans_dir: where the plans are written (default: <project>/plans/airflow), one per
DAG run. docs/guides/orchestrate-with-airflow.md.
"""

from __future__ import annotations

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG, Param, TriggerRule, task
from backfill_safe_tasks import RETRIES, RETRY_DELAY, START_DATE, TAGS, bash, failed_tasks

DATE = r"^\d{4}-\d{2}-\d{2}$"

with DAG(
    dag_id="backfill_safe_backfill",
    schedule=None,
    start_date=START_DATE,
    catchup=False,
    tags=TAGS,
    doc_md=__doc__,
    params={
        "select": Param("", type="string", minLength=1, description="models, space or comma separated; + allowed"),
        "start": Param("", type="string", pattern=DATE, description="first event date, inclusive"),
        "end": Param("", type="string", pattern=DATE, description="last event date, exclusive"),
        "batch_days": Param(7, type="integer", minimum=1, maximum=31, description="days per window"),
        "reason": Param("", type="string", minLength=1, maxLength=500, description="why; recorded with the run"),
        "require_approval": Param(True, type="boolean", description="a human approves the plan before it runs"),
        "rebuild_downstream": Param(False, type="boolean", description="rebuild the stale models downstream"),
    },
):
    plan = bash(
        "plan",
        'plan="${PLANS_DIR:-$PWD/plans/airflow}/$PLAN_NAME.yml"\n'
        'mkdir -p "$(dirname "$plan")" || exit 1\n'
        '"$bin/pipeline" backfill --select "$SELECT" --start "$START" --end "$END" --batch-days "$BATCH_DAYS" '
        '--reason "$REASON" --plan-out "$plan" || exit $?\n'
        'cat "$plan"\n'
        'echo "$plan"',
        env={
            "PLANS_DIR": "{{ var.value.get('backfill_safe_plans_dir', '') }}",
            "PLAN_NAME": "{{ dag_run.run_id | replace(':', '') | replace('+', '_') }}",
            "SELECT": "{{ params.select }}",
            "START": "{{ params.start }}",
            "END": "{{ params.end }}",
            "BATCH_DAYS": "{{ params.batch_days }}",
            "REASON": "{{ params.reason }}",
        },
    )

    @task.branch
    def needs_approval(params=None) -> str:
        return "approve" if params["require_approval"] else "apply"

    approve = ApprovalOperator(
        task_id="approve",
        subject="Backfill {{ params.select }} over [{{ params.start }}, {{ params.end }}): apply its plan?",
        body="Reason: {{ params.reason }}\n\nThe plan: `{{ ti.xcom_pull(task_ids='plan') }}`; its windows, "
        "models and cost per window are in the log of the task `plan`. Approve to apply exactly this plan.",
    )
    apply = bash(
        "apply",
        'if [ "$REBUILD" = "True" ]; then exec "$bin/pipeline" apply "$PLAN" --rebuild-downstream; fi\n'
        'exec "$bin/pipeline" apply "$PLAN"',
        env={"PLAN": "{{ ti.xcom_pull(task_ids='plan') }}", "REBUILD": "{{ params.rebuild_downstream }}"},
        retries=RETRIES,
        retry_delay=RETRY_DELAY,
        trigger_rule=TriggerRule.NONE_FAILED_MIN_ONE_SUCCESS,
    )
    branch = needs_approval()
    plan >> branch >> [approve, apply]
    approve >> apply
    [plan, branch, approve, apply] >> failed_tasks()
