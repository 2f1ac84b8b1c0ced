"""The gate: the data tests of a run's models, run on its branches before anything is
published, over the dates the run wrote (its windows) less the dates a restatement holds back
(macro backfill_gate_dates). A test of severity warn is reported, not a reason to withhold; a
failing reconciliation names its dates, in the restated window or outside it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from rich.console import Console

from pipeline.backfill.control import Control
from pipeline.dbt import Dbt, NodeResult
from pipeline.engine import Sql, ThriftSql

# the framework's reconciliation tests whose failing rows carry a date: its column
_DATED_TESTS = {
    "reconcile_daily_totals": "reconciled_date",
    "no_unloaded_changes": "coalesce(restate_date, event_date)",
}
_DATES_SHOWN = 5  # a gate's message is kept to 2,000 characters


def date_ranges(windows: list) -> list[list[str]]:
    """A run's windows as [start, end) date pairs, adjacent ones joined (the gate's var
    backfill_gate_windows)."""
    ranges: list[list] = []
    for window in sorted(windows, key=lambda w: w.window_start):
        if ranges and window.window_start <= ranges[-1][1]:
            ranges[-1][1] = max(ranges[-1][1], window.window_end)
        else:
            ranges.append([window.window_start, window.window_end])
    return [[str(start), str(end)] for start, end in ranges]


@dataclass
class Verdict:
    """The gate's tests that failed (not pass, not warn), with the dates each names."""

    failed: list[NodeResult] = field(default_factory=list)
    dated: dict[str, str] = field(default_factory=dict)


def run(
    dbt: Dbt, spark: Sql, console: Console, control: Control, run_id: str, models: list[str], windows: list
) -> Verdict:
    """Run the gate of `run_id` (its recorded `windows`) on its branches and record it."""
    if not isinstance(spark, ThriftSql):
        # the embedded session is every dbt connection's: the gate's tests read the
        # branch whether or not the project dispatches get_test_sql to the framework
        # (cleared by the runner once the run ends)
        spark.conf.set("spark.wap.branch", run_id)
    # the gate checks the dates the run wrote (its windows): the rest of each table is
    # main's, where changes landed and not yet loaded are the daily run's; and a
    # restatement's gate leaves out the dates of the late rows it held (pending
    # sign-off): not its to fix (macro backfill_gate_dates)
    excluded = [str(d) for d in control.gate_exclusions(run_id)]
    gate_vars = {
        "backfill_branch": run_id,
        "backfill_gate_windows": date_ranges(windows),
        **({"backfill_gate_excluded_dates": excluded} if excluded else {}),
    }
    tests = [
        n
        for n in dbt.invoke("test", "--select", *models, "--vars", json.dumps(gate_vars), check=False)
        if n.resource_type == "test"
    ]
    control.record_gate(
        run_id,
        [
            (n.name, n.generic_test, n.attached_node.split(".")[2] if n.attached_node else None, n.status, n.failures)
            for n in tests
        ],
    )
    # a test of severity warn (the volume alerts) is reported, not a reason to withhold
    failed = [n for n in tests if n.status not in ("pass", "warn")]
    # the dates a failing reconciliation names, read on the branch while it is set
    dated = {n.name: failing_dates(spark, run_id, n, date_ranges(windows)) for n in failed}
    for warned in (n for n in tests if n.status == "warn"):
        console.print(f"[yellow]warning[/] {warned.name}: {warned.failures} rows")
    return Verdict(failed, dated)


def message(verdict: Verdict, windows: list, behind: list[tuple[str, str]]) -> str:
    """Why a gate withheld the publish: each failing test with its dates, the run's ranges, and
    the models (`behind`) that were behind their upstream before the run."""
    text = "; ".join(f"{n.name}: {n.status} ({n.failures}){verdict.dated.get(n.name, '')}" for n in verdict.failed)
    text += f" (the run restated {', '.join(f'[{s}, {e})' for s, e in date_ranges(windows))})"
    if behind:
        text += (
            "; behind their upstream before this run, so their other dates differ too: "
            + "; ".join(f"{name} ({why})" for name, why in behind)
            + f": run them first (dbt run --select {' '.join(name for name, _ in behind)}),"
            " then this again"
        )
    return text


def failing_dates(spark: Sql, run_id: str, test: NodeResult, ranges: list[list[str]]) -> str:
    """' on <date> (in the restated window | outside it), ...': the dates a failing test of
    the framework's reconciliations returns (read from its compiled select on the run's
    branch), each against the run's [start, end) ranges; '' for any other test."""
    column = _DATED_TESTS.get(test.generic_test or "")
    if column is None or not test.compiled_code:
        return ""
    query = (
        f"select distinct cast({column} as string) as failing_date from ({test.compiled_code}) as failing"
        f" where {column} is not null order by 1 limit {_DATES_SHOWN + 1}"
    )
    thrift = isinstance(spark, ThriftSql)
    try:
        if thrift:  # this thread's own connection reads the branch, as the test's did
            spark.conf.set("spark.wap.branch", run_id)
        dates = [r.failing_date for r in spark.sql(query).collect()]
    except Exception as error:  # noqa: BLE001 - the gate's report, not its verdict
        first = (str(error).strip().splitlines() or [repr(error)])[0]
        return f" (its dates could not be read: {first[:200].replace(';', ',')})"
    finally:
        if thrift:
            spark.conf.unset("spark.wap.branch")
    if not dates:
        return ""
    shown = [
        f"{d} ({'in the restated window' if any(s <= d < e for s, e in ranges) else 'outside it'})"
        for d in dates[:_DATES_SHOWN]
    ]
    return " on " + ", ".join(shown) + (", ..." if len(dates) > _DATES_SHOWN else "")
