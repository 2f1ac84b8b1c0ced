"""What stands downstream of a run's models once it is published or rolled back: the data
tests of every model that reads them, the tables and plain incremental models left stale
(rebuilt on request), and the exposures to tell; recorded in control.backfill_downstream,
printed, and summed up in a version note."""

from __future__ import annotations

from rich.console import Console

from pipeline import paths
from pipeline.backfill.control import Control
from pipeline.dbt import Dbt
from pipeline.engine import Sql
from pipeline.manifest import downstream_of, tested_models


def check(
    dbt: Dbt, control: Control, console: Console, run_id: str, models: list[str], event: str, rebuild: bool
) -> None:
    """After a publish or a rollback changed `models`' tables: what reads them is checked and
    recorded (control.backfill_downstream). Views read the new rows; tables and incremental
    models that are not of the framework's kind hold what they read before, so they are
    stale: named with the command that refreshes them, or rebuilt first when `rebuild` (a
    table run again, a plain incremental model fully refreshed: its own incremental logic
    would not see history rewritten); then the data tests of every downstream model run
    (their failures do not undo the event: its own gate was before); and the exposures that
    read any of them are named as consumers to refresh. A failure here (a rebuild, a test,
    dbt itself) is recorded and printed, never raised: the event stands (`failed` tells)."""
    rows: list[tuple] = []
    try:
        # a rollback is a process of its own: the project as it is now; a resume that found its
        # publish done (a fresh process, a scheduler's retry on another worker) has no manifest
        if event == "rolled_back" or not (paths.target_dir() / "manifest.json").exists():
            dbt.invoke("parse")
        found = downstream_of(models)
        stale: dict[str, list[str]] = {"rebuild": [], "full refresh": []}
        for node in found:
            if node.resource_type == "model" and node.refresh in stale:
                stale[node.refresh].append(node.name)
        rebuilt = _rebuild(dbt, stale) if rebuild else {}
        for node in found:
            if node.resource_type == "exposure":
                rows.append(("exposure", node.name, None, None, "to refresh", node.detail, None))
                continue
            status, message = rebuilt.get(node.name) or (
                ("stale", None) if node.refresh in stale or node.refresh == "backfill" else ("current", None)
            )
            rows.append(("model", node.name, node.name, node.materialized, status, message or node.detail, None))
        # one dbt invocation, when any downstream model has a data test
        tested = tested_models([n.name for n in found if n.resource_type == "model"])
        if tested:
            for n in dbt.invoke("test", "--select", *tested, check=False):
                if n.resource_type == "test":
                    rows.append(
                        (
                            "test",
                            n.name,
                            n.attached_node.split(".")[2] if n.attached_node else None,
                            None,
                            n.status,
                            n.generic_test,
                            n.failures,
                        )
                    )
    except Exception as error:  # the event stands; what could not be checked is recorded
        rows.append(("error", "downstream health", None, None, "error", str(error)[:2000], None))
    if rows:
        control.record_downstream(run_id, event, rows)
    show(console, event, rows)


def _rebuild(dbt: Dbt, stale: dict[str, list[str]]) -> dict[str, tuple[str, str | None]]:
    """The stale models rebuilt (tables run again, plain incremental models fully refreshed):
    per model, 'rebuilt' or 'rebuild failed' with why."""
    rebuilt: dict[str, tuple[str, str | None]] = {}
    for refresh, names in stale.items():
        if names:
            extra = ("--full-refresh",) if refresh == "full refresh" else ()
            for n in dbt.invoke("run", *extra, "--select", *names, check=False):
                if n.resource_type == "model":
                    rebuilt[n.name] = (
                        ("rebuilt", None)
                        if n.status == "success"
                        else ("rebuild failed", f"{n.status}: {n.message or ''}"[:500])
                    )
    return rebuilt


def show(console: Console, event: str, rows: list[tuple]) -> None:
    """What check found, on the console."""
    if not rows:
        console.print(f"downstream: nothing reads the {event.replace('_', ' ')} models")
        return
    consumers = [r for r in rows if r[0] == "exposure"]
    if consumers:
        console.print(
            "[yellow]consumers to refresh[/] (exposures): "
            + "; ".join(f"{r[1]} ({r[5]})" if r[5] else r[1] for r in consumers)
        )
    for kind, name, _model, materialized, status, detail, _failures in rows:
        if kind == "model" and status != "current":
            colour = "green" if status == "rebuilt" else "red" if status == "rebuild failed" else "yellow"
            console.print(f"[{colour}]{status}[/] {name} ({materialized}): {detail}")
    tests = [r for r in rows if r[0] == "test"]
    failing = [r for r in tests if r[4] not in ("pass", "warn")]
    if tests:
        console.print(
            f"downstream data tests: {len(tests) - len(failing)} passed, {len(failing)} failed"
            + "".join(f"\n  [red]{r[4]}[/] {r[1]} ({r[6]})" for r in failing)
        )
    for row in (r for r in rows if r[0] == "error"):
        console.print(f"[red]downstream not checked[/]: {row[5]}")


def failed(spark: Sql, run_id: str, event: str = "published") -> bool:
    """A data test downstream failed, a rebuild failed, or the check itself did, after the
    latest `event` of the run."""
    return any(
        (r.resource_type == "test" and r.status not in ("pass", "warn")) or r.status in ("rebuild failed", "error")
        for r in Control(spark).downstream(run_id, event)
    )


def note_lines(rows: list) -> list[str]:
    """A version note's lines on what stood downstream once the run was published."""
    consumers = [r for r in rows if r.resource_type == "exposure"]
    refreshed = [r for r in rows if r.resource_type == "model" and r.status != "current"]
    tests = [r for r in rows if r.resource_type == "test"]
    failing = [r for r in tests if r.status not in ("pass", "warn")]
    lines = []
    if consumers:
        lines.append("  consumers to refresh: " + "; ".join(f"{r.name} ({r.detail})" for r in consumers))
    if refreshed:
        lines.append("  downstream models: " + "; ".join(f"{r.name} {r.status}" for r in refreshed))
    if tests:
        lines.append(
            f"  downstream data tests: {len(tests) - len(failing)} passed, {len(failing)} failed"
            + "".join(f"; {r.name} {r.status} ({r.failures})" for r in failing)
        )
    lines.extend(f"  downstream not checked: {r.detail}" for r in rows if r.resource_type == "error")
    return lines
