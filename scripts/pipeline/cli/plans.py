"""`pipeline apply PLAN`: run exactly a reviewed plan file (`backfill | restate ... --plan-out`),
refused when a plan made now differs from it; `--check` checks plan files without Spark (CI over
a folder of plans). Refusals exit 2, a dbt failure exits 1 (pipeline.cli.refusing)."""

from __future__ import annotations

import click

from pipeline.cli import command, refusing
from pipeline.cli.backfills import (
    _checked_parallel,
    _lane,
    _not_during,
    _parallel,
    _rebuild,
    _refusals,
    _runner,
    _show_run,
)
from pipeline.cli.restatements import _show_pending


@click.argument("plan_files", metavar="PLAN...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option(
    "--replan",
    is_flag=True,
    help="Run nothing: when the plan is stale, write the plan made now over PLAN (for another "
    "review); when it is not, say so.",
)
@click.option(
    "--check",
    is_flag=True,
    help="Only check the files (fields, hash, parameters, every model a model of the project), "
    "without Spark: for CI over a folder of plans. Runs nothing.",
)
@_rebuild
@_not_during
@_parallel
@refusing(_refusals)
def apply(plan_files, replan, check, rebuild_downstream, not_during, parallel, out) -> int:
    """Run the backfill or restatement of PLAN exactly: its hash is checked (a plan edited after
    planning is refused), the plan is made again from its parameters on the code and data of now,
    and a different scope (models, tables, windows, a restatement's late keys), different gates
    (data tests) or different code (the SQL or yml configuration of a model in scope or of what
    it reads, the macros, dbt_project.yml) is refused with the difference.
    Tables committed to since planning are shown and do not stop it. The run records the plan
    (pipeline status RUN_ID)."""
    from pathlib import Path

    from pipeline.backfill import plan_file as plans
    from pipeline.backfill.control import RESUMABLE
    from pipeline.backfill.plan import PlanError

    if check:
        return _check_plans(out, [Path(f) for f in plan_files])
    if len(plan_files) != 1:
        raise PlanError("apply runs one plan at a time (several only with --check)")
    path = Path(plan_files[0])
    planned, text = plans.load_with_text(path)
    runner = _runner(out, rebuild_downstream, _lane(not_during), _checked_parallel(parallel))
    parameters = planned["parameters"]
    impacts = None
    try:  # restate_plan holds the audit's rows: released however this ends
        if planned["kind"] == "backfill":
            if parameters.get("windows") is not None:
                plan = runner.plan_windows(plans.window_list(parameters["windows"]), parameters.get("select"))
            else:
                plan = runner.plan(
                    parameters["start"], parameters["end"], parameters.get("select"), parameters["batch_days"]
                )
        else:
            plan = runner.restate_plan(parameters.get("select"), parameters["batch_days"])
            if plan is None:
                raise _stale(
                    path,
                    [
                        "scope: nothing to restate now (every late change planned is in the "
                        "marts, or was restated since)"
                    ],
                )
            impacts = runner.restate_impact(parameters.get("select"))
            _show_pending(runner, out, parameters.get("select"))
        now = runner.plan_document(plan, planned["kind"], planned["reason"], parameters, impacts)
        stale = plans.differences(planned, now)
        if replan:  # never runs anything: a re-plan is reviewed before it is applied
            if not stale:
                out.print(
                    f"{path}: unchanged (a plan made now has the same scope, gates and code); nothing run",
                    markup=False,
                    highlight=False,
                )
                return 0
            plans.dump(now, path)
            out.print(f"{path}: re-planned, nothing run; review the difference, then apply it:", markup=False)
            for line in stale:
                out.print(f"  {line}", markup=False, highlight=False)
            return 0
        if stale:
            raise _stale(path, stale)
        for line in plans.notes(planned, now):
            out.print(f"note: {line}", markup=False, highlight=False)
        earlier = runner.run_of_plan(planned["plan_hash"])
        if earlier is not None and earlier.status in ("published", *RESUMABLE):
            return _applied_before(runner, out, path, earlier, impacts)
        applied = (planned["plan_hash"], str(path), text)
        out.print(
            f"applying {path} (plan_hash {planned['plan_hash'][:12]}): {len(plan.windows)} windows, "
            f"models {', '.join(m.name for m in plan.models)}",
            markup=False,
            highlight=False,
        )
        if impacts is not None:
            return _show_run(runner, out, runner.restate(plan, planned["reason"], impacts, applied))
        return _show_run(runner, out, runner.start(plan, planned["reason"], applied))
    finally:
        runner.release_audit()


def _applied_before(runner, out, path, run, impacts) -> int:
    """A plan applied before, as a scheduler's retry of its task applies it again: its run is not
    started twice. A published run is shown, and nothing runs; an unpublished one (failed, paused,
    or running with its owner gone) is resumed: its windows not done run, then its gate and
    publish (a run held by a live owner is refused by the resume)."""
    if run.status == "published":
        out.print(
            f"{path}: applied already by {run.run_id}, published {run.finished_at}: nothing run",
            markup=False,
            highlight=False,
        )
        return _show_run(runner, out, run.run_id)
    out.print(
        f"{path}: applied before by {run.run_id}, {run.status}: resuming it (its windows not done run, "
        "then its gate and publish)",
        markup=False,
        highlight=False,
    )
    if impacts is None:
        return _show_run(runner, out, runner.resume(run.run_id))
    return _show_run(runner, out, runner.resume_restatement(run.run_id, impacts))


def _check_plans(out, files) -> int:
    """`apply --check`: each file loads (fields, hash, parameters) and names models of the project
    only (dbt's manifest, parsed without Spark). A failing file is a refusal naming it."""
    import json

    from pipeline import paths
    from pipeline.backfill import plan_file as plans
    from pipeline.backfill.plan import PlanError
    from pipeline.dbt import parse_project

    documents = [(path, plans.load(path)) for path in files]
    parse_project()
    manifest = json.loads((paths.target_dir() / "manifest.json").read_text())
    models = {n["name"] for n in manifest["nodes"].values() if n["resource_type"] == "model"}
    for path, document in documents:
        unknown = plans.unresolved(document, models)
        if unknown:
            raise PlanError(f"{path}: {', '.join(unknown)} is not a model of the project")
        out.print(
            f"ok {path}: {document['kind']}, {len(document['scope']['windows'])} windows, "
            f"models {', '.join(document['scope']['models'])}",
            markup=False,
            highlight=False,
        )
    return 0


def _stale(path, differences: list[str]):
    from pipeline.backfill.plan import BackfillRefused

    return BackfillRefused(
        f"{path} is stale: a plan made now differs from it, so nothing ran:\n"
        + "\n".join(f"  {line}" for line in differences)
        + f"\nplan again and have it reviewed (`pipeline apply --replan {path}` writes the new plan)"
    )


def register(group: click.Group) -> None:
    """The commands of this module, each with its --help's exit codes (pipeline.cli.EXIT_CODES)."""
    for function, name, short_help in ((apply, "apply", "Run exactly a reviewed plan file (written by --plan-out)."),):
        command(group, name, short_help=short_help)(function)
