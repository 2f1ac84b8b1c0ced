"""The late-data policy of a backfill_safe project, on a schedule: what arrived late within each
model's restatement window restated, and what is older held for a human's sign-off.

    restate         `pipeline restate --reason R`: restates the dates of the late keys within
                    their window (a backfill on branches, gated, published once); exit 3 (keys
                    late beyond their window held) passes on to the review. Retried
                    (BACKFILL_SAFE_RETRIES): 5 (paused for the daily run) too.
    any_held        the rest runs only when keys are held
    review          `pipeline signoff`: the keys held, their impact per model and date, and the
                    hash that names them
    approve         a human approves with a reason, or rejects (Airflow's Required Actions)
    signoff         `pipeline signoff --approve HASH --by WHO --reason WHY`: recorded; refused if
                    the rows held changed since the review
    restate_signed  `pipeline restate`: restates the signed-off keys now
    failed_tasks    fails the run when any task failed

Variables: backfill_safe_restatement_reason (default "the late-data policy, scheduled"),
backfill_safe_restatement_max_partitions (the cost ceiling; default: the project's var).
docs/guides/orchestrate-with-airflow.md.
"""

from __future__ import annotations

from airflow.providers.standard.operators.hitl import ApprovalOperator
from airflow.sdk import DAG, Param, task
from backfill_safe_tasks import RESTATEMENT_SCHEDULE, RETRIES, RETRY_DELAY, START_DATE, TAGS, bash, failed_tasks

# exit 3 is the policy working (keys held, for the review), not the task failing
RESTATE = """\
ceiling=()
if [ -n "$MAX_PARTITIONS" ]; then ceiling=(--max-partitions "$MAX_PARTITIONS"); fi
code=0
"$bin/pipeline" restate --reason "$REASON" "${ceiling[@]}" || code=$?
case $code in
  0) echo "nothing held" ;;
  3) echo "held" ;;
  *) exit $code ;;
esac
"""
REVIEW = """\
review="$(mktemp)" || exit 1
trap 'rm -f "$review"' EXIT
"$bin/pipeline" signoff > "$review" || { code=$?; cat "$review"; exit $code; }
cat "$review"
hash="$(grep -o 'hash [0-9a-f]\\{16\\}\\. To' "$review" | cut -c6-21)"
if [ -z "$hash" ]; then exit 99; fi
echo "$hash"
"""

with DAG(
    dag_id="backfill_safe_restatement",
    schedule=RESTATEMENT_SCHEDULE,
    start_date=START_DATE,
    catchup=False,
    max_active_runs=1,
    tags=TAGS,
    doc_md=__doc__,
):
    settings = {
        "REASON": "{{ var.value.get('backfill_safe_restatement_reason', 'the late-data policy, scheduled') }}",
        "MAX_PARTITIONS": "{{ var.value.get('backfill_safe_restatement_max_partitions', '') }}",
    }
    restate = bash("restate", RESTATE, env=settings, retries=RETRIES, retry_delay=RETRY_DELAY)

    @task.short_circuit
    def any_held(outcome: str) -> bool:
        return outcome == "held"

    # the review printed in the log; its last line, the hash, the task's XCom (99: nothing held by now)
    review = bash("review", REVIEW, skip_on_exit_code=99)
    approve = ApprovalOperator(
        task_id="approve",
        subject="Restate the late keys held beyond their restatement window?",
        body="The keys held, their impact per model and date and their hash "
        "`{{ ti.xcom_pull(task_ids='review') }}` are in the log of the task `review`. "
        "Approve with a reason to have them restated now; reject to keep holding them.",
        # an empty reason is refused by the sign-off (a default Param must be valid, so no minLength)
        params={"reason": Param("", type="string", maxLength=500, description="why they may be restated")},
    )
    signoff = bash(
        "signoff",
        '"$bin/pipeline" signoff --approve "$HASH" --by "$SIGNED_BY" --reason "$WHY"',
        env={
            "HASH": "{{ ti.xcom_pull(task_ids='review') }}",
            "SIGNED_BY": "{{ (ti.xcom_pull(task_ids='approve')['responded_by_user'] or {}).get('name', 'unknown') }}",
            "WHY": "{{ ti.xcom_pull(task_ids='approve')['params_input']['reason'] }}",
        },
    )
    restate_signed = bash("restate_signed", RESTATE, env=settings, retries=RETRIES, retry_delay=RETRY_DELAY)
    held = any_held(restate.output)
    held >> review >> approve >> signoff >> restate_signed
    [restate, held, review, approve, signoff, restate_signed] >> failed_tasks()
