"""What the framework's own work costs as a team's project grows (issue 81): the generated
warehouse (harness.generated_warehouse) at several sizes, each measured in a process of its own
(one JVM) on a fresh embedded warehouse, and beside it the same project with its models as
plain dbt incremental models (the twin: dbt's own floor).

    PYTHONPATH=scripts .venv/bin/python -m harness.warehouse_cost --domains 3,13,50 --work DIR \\
        --out X.json --markdown X.md

At each size (4 models of the kind a domain: 3, 13 and 50 domains are 12, 52 and 200):
`dbt parse` from nothing (no partial parse); the first run (day 0 of every domain landed); an
idle run (nothing landed); a daily run where one domain landed (its day 1) and one where every
other domain landed; then the tools: `pipeline status`, `report` (the status page), `restate
--dry-run`, `explain` of one fact, `backfill --dry-run` of one domain. Per run: its wall time,
the hooks' (on-run-start, on-run-end) statements and Spark seconds, the models' statements, and
how many models ran no statement or one (harness.statement_budget). The twin: its first run and
an idle run. Each run is a `dbt run` of the whole project, as a scheduler runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

STEPS = ("parse", "first run", "idle run", "one domain landed", "every domain landed")
TOOLS = ("status", "report", "restate --dry-run", "explain", "backfill --dry-run")


def _run_figures(budget, nodes, wall: float, one_domain: str | None = None) -> dict:
    report = budget.report(nodes)
    hooks = {name: entry for name, entry in report["models"].items() if name.startswith("on-run-")}
    models = {n.unique_id.split(".")[-1]: n for n in nodes if n.resource_type == "model"}
    statements = {name: report["models"].get(name, {}).get("statements", 0) for name in models}
    idle_ones = [name for name in statements if one_domain is None or one_domain not in name]
    hook_nodes = [n for n in nodes if n.unique_id.startswith("operation.")]
    return {
        "wall_s": round(wall, 2),
        # dbt's execution times: the models', the hooks' (compiling a hook's Jinja included)
        "models_s": round(sum(n.execution_time or 0 for n in nodes if n.resource_type == "model"), 2),
        "hooks_s": round(sum(n.execution_time or 0 for n in hook_nodes), 2),
        "hooks": {"statements": sum(h["statements"] for h in hooks.values()),
                  "spark_s": round(sum(h["spark_s"] for h in hooks.values()), 2),
                  "by_hook": {name: {"statements": h["statements"], "spark_s": h["spark_s"]}
                              for name, h in sorted(hooks.items())}},
        "models": len(models),
        "model_statements": sum(statements.values()),
        "models_with_0_statements": sum(1 for n in idle_ones if statements[n] == 0),
        "models_with_1_statement": sum(1 for n in idle_ones if statements[n] == 1),
        "most_statements": max(statements.items(), key=lambda i: i[1], default=(None, 0)),
    }


def measure(domains: int, work: Path, twin: bool) -> dict:
    """One size, in this process: `work` is a fresh folder (the project, its state, the files)."""
    project = work / "project"
    os.environ["PIPELINE_STATE_DIR"] = str(work / "state")
    os.environ["DBT_PROJECT_DIR"] = str(project)
    framework = Path(__file__).resolve().parents[2]
    os.environ["DBT_PROFILES_DIR"] = str(framework / "profiles")
    from harness.generated_warehouse import domain_name, land_day, write_warehouse
    from harness.statement_budget import StatementBudget
    from pipeline import cli
    from pipeline.dbt import Dbt
    from pipeline.spark import get_spark

    kinds = write_warehouse(project, domains, twin=twin)
    spark = get_spark()
    dbt = Dbt(quiet=True)
    figures: dict = {"domains": domains, "models_of_the_kind": 0 if twin else len(kinds),
                     "twin": twin, "runs": {}, "tools": {}}
    began = time.monotonic()
    dbt.invoke("parse")
    figures["runs"]["parse"] = {"wall_s": round(time.monotonic() - began, 2)}

    def run(step: str, one_domain: str | None = None) -> None:
        budget = StatementBudget(dbt)
        began = time.monotonic()
        with budget.recording():
            nodes = dbt.invoke("run")
        figures["runs"][step] = _run_figures(budget, nodes, time.monotonic() - began, one_domain)
        print(f"{domains} domains{' (twin)' if twin else ''}: {step} {figures['runs'][step]['wall_s']} s",
              file=sys.stderr, flush=True)
        kept()

    def kept() -> None:  # what is measured so far, kept when a later step fails
        (work / "figures.json").write_text(json.dumps(figures))

    files = work / "files"
    land_day(spark, project, domains, 0, files)
    run("first run")
    run("idle run")
    if twin:
        return figures
    first = domain_name(1)
    land_day(spark, project, domains, 1, files, only=[1])
    run("one domain landed", first)
    land_day(spark, project, domains, 1, files, only=list(range(2, domains + 1)))
    run("every domain landed")
    for tool, argv in (("status", ["status"]), ("report", ["report", "--out", str(work / "status.html")]),
                       ("restate --dry-run", ["restate", "--dry-run"]),
                       ("explain", ["explain", f"fct_{first}_event"]),
                       ("backfill --dry-run", ["backfill", "--dry-run", "--select", f"fct_{first}_event",
                                              "--start", "2025-02-01", "--end", "2025-02-04",
                                              "--reason", "cost"])):
        began = time.monotonic()
        try:
            code: int | str = cli.main(argv)
        except Exception as error:  # noqa: BLE001 - a tool that fails for size is a figure too
            code = f"{type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}"
        figures["tools"][tool] = {"wall_s": round(time.monotonic() - began, 2), "exit": code}
        print(f"{domains} domains: {tool} {figures['tools'][tool]}", file=sys.stderr, flush=True)
        kept()
    return figures


def _hooks(run: dict) -> str:
    return f"{run['hooks']['statements']} / {run['hooks']['spark_s']} / {run.get('hooks_s', '-')}"


def markdown(results: list[dict], command: str, commit: str) -> str:
    ours = [r for r in results if not r["twin"]]
    twins = {r["domains"]: r for r in results if r["twin"]}
    lines = [f"# The framework's cost as the project grows ({commit})", "", f"`{command}`", "",
             "Each size in a process of its own on a fresh embedded warehouse; every run a `dbt run` of the "
             "whole project. Hooks: on-run-start and on-run-end, their Spark statements and seconds.", "",
             "| models of the kind | parse s | first run s | idle run s | twin's idle run s | "
             "one domain landed s | every domain landed s | hooks, idle (stmts / Spark s / dbt s) | "
             "hooks, one domain | models idle with 0 / 1 statements, one domain landed |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in ours:
        runs = r["runs"]
        twin = twins.get(r["domains"], {}).get("runs", {}).get("idle run", {}).get("wall_s", "-")
        one = runs.get("one domain landed")
        wall = {step: runs.get(step, {}).get("wall_s", "-") for step in STEPS}
        lines.append(
            f"| {r['models_of_the_kind']} | {wall['parse']} | {wall['first run']} | {wall['idle run']} | {twin} | "
            f"{wall['one domain landed']} | {wall['every domain landed']} | "
            f"{_hooks(runs['idle run']) if 'idle run' in runs else '-'} | {_hooks(one) if one else '-'} | "
            + (f"{one['models_with_0_statements']} / {one['models_with_1_statement']} of {one['models']} |"
               if one else "- |"))
    lines += ["", "| models of the kind | " + " | ".join(f"{t} s (exit)" for t in TOOLS) + " |",
              "|---|" + "---|" * len(TOOLS)]
    for r in ours:
        lines.append(f"| {r['models_of_the_kind']} | " + " | ".join(
            f"{r['tools'][t]['wall_s']} ({r['tools'][t]['exit']})" if t in r["tools"] else "-" for t in TOOLS) + " |")
    failed = [r for r in results if r.get("failed")]
    if failed:
        lines += [""] + [f"- {r['models_of_the_kind'] or r['domains']} {'(twin) ' if r['twin'] else ''}"
                         f"failed after what is shown: {r['failed']}" for r in failed]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", default="3,13,50", help="sizes, in domains (4 models of the kind each)")
    parser.add_argument("--work", type=Path, required=True, help="a folder for the projects and warehouses")
    parser.add_argument("--out", type=Path, help="the figures as JSON")
    parser.add_argument("--markdown", type=Path, help="the figures as a markdown table")
    parser.add_argument("--no-twin", action="store_true", help="leave out the plain-model twin")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child: one size
    parser.add_argument("--twin", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one is not None:
        print("RESULT " + json.dumps(measure(args.one, args.work, args.twin)), flush=True)
        return 0
    try:
        sizes = [int(d) for d in args.domains.split(",")]
    except ValueError:
        parser.error(f"--domains: a comma-separated list of whole numbers, got {args.domains!r}")
    if any(d < 1 for d in sizes):
        parser.error(f"--domains: each size at least 1, got {args.domains!r}")
    results = []
    for domains in sizes:
        for twin in (False,) if args.no_twin else (False, True):
            work = args.work.resolve() / f"{domains}{'-twin' if twin else ''}"
            if work.exists():
                parser.error(f"{work} exists: --work must be a fresh folder")
            work.mkdir(parents=True)
            done = subprocess.run([sys.executable, "-m", "harness.warehouse_cost", "--one", str(domains),
                                   "--work", str(work), *(["--twin"] if twin else [])],
                                  capture_output=True, text=True)
            (work / "child.log").write_text(done.stdout + done.stderr)
            found = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
            if done.returncode != 0 or not found:
                print(f"{domains} domains{' (twin)' if twin else ''} failed (exit {done.returncode}): "
                      f"{work / 'child.log'}\n{done.stderr[-3000:]}", file=sys.stderr)
                # what it measured before it failed, kept and marked; the other sizes go on
                partial = work / "figures.json"
                if not partial.exists():
                    return 1
                figures = json.loads(partial.read_text())
                errors = [line for line in done.stderr.splitlines() if "Error" in line]
                figures["failed"] = (errors[-1] if errors else f"exit {done.returncode}")[:300]
                results.append(figures)
                continue
            results.append(json.loads(found[0].removeprefix("RESULT ")))
            print(f"{domains} domains{' (twin)' if twin else ''}: done", file=sys.stderr, flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                            cwd=Path(__file__).parent).stdout.strip()
    command = "python -m harness.warehouse_cost " + " ".join(argv if argv is not None else sys.argv[1:])
    if args.out:
        args.out.write_text(json.dumps({"commit": commit, "command": command, "results": results}, indent=1))
    text = markdown(results, command, commit)
    if args.markdown:
        args.markdown.write_text(text)
    print(text)
    return 1 if any(r.get("failed") for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
