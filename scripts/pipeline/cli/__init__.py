"""`pipeline`: the project's command line, on click (a dbt dependency already).

    pipeline land FILE... [--table T]       validate and append files to the raw tables
    pipeline backfill | status | rollback   windowed, isolated, reversible backfills (see --help)
    pipeline restate [--select] --reason R  backfill only the dates of rows late beyond their window
    pipeline apply PLAN                     run exactly a reviewed plan (backfill|restate ... --plan-out)
    pipeline changelog                      the version notes of published backfills
    pipeline compare MODEL                  dual run: full refresh in a scratch schema vs the incremental table
    pipeline explain MODEL...               what the next daily run of models will read, before it runs
    pipeline report [--out FILE]            the status page: one static HTML file
    pipeline maintain [options]             compact small files, expire snapshots, keep backfills reversible
    pipeline cluster start|stop|status      the local Spark cluster + Thrift Server of the `cluster` target
    pipeline package-dir                    the folder of the framework's dbt package (for packages.yml)
    pipeline dags-dir                       the folder of the framework's Airflow DAGs

One module per command group: `land` (landing), `backfills` (backfill, status, changelog,
rollback), `restatements` (restate, signoff), `plans` (apply), `inspection` (compare, explain,
report), `maintain`, `cluster`, `package` (package-dir, dags-dir). Each module imports Spark, dbt and the
product's modules that start Spark or dbt only inside its
commands, after the command line is checked.
The shop example's sample and main job are `python -m sample generate|main` (scripts/sample/).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import click

# Each command's exit codes, shown at the end of its --help (docs/reference/cli.md says the same,
# with the cases; a fast test keeps the two in step). Every command also exits 2 when click
# refuses its command line, and 1 on an exception it does not catch.
EXIT_CODES = {
    "land": "0 landed (or skipped); 2 a file or the contract refused, nothing appended; 3 a commit refused "
    "by concurrent landings 5 times (the cluster target), the files before it appended; N (--nothing-new-exit N) "
    "no file was new",
    "backfill": "0 published, dry run printed, abandoned, or a pause asked (with --wait: and the warehouse "
    "free); 1 the gate or a window failed, or --pause --wait timed out; "
    "2 refused (bad argument, another run holds the lock, main moved); "
    "4 published, and downstream a data test, a rebuild or the check failed (pipeline status RUN_ID); "
    "5 paused at a window boundary for the fresh data (not during its span, or asked to pause)",
    "restate": "0 published, nothing to restate, or dry run; 1 the restatement's backfill did not publish, "
    "or dbt failed; 2 refused (a bad argument, a model without a declaration, the audit view missing "
    "or not covering a model, a model not built or not auditable, over the cost ceiling without "
    "an approval, or a backfill refusal); 3 published or nothing to restate, and rows late beyond "
    "their restatement window are held, pending sign-off; 4 published, and downstream a data test, "
    "a rebuild or the check failed (pipeline status RUN_ID), whatever is held; 5 paused for the "
    "fresh data, as backfill",
    "signoff": "0 reviewed, signed off, or nothing held; 1 dbt failed; 2 refused (a bad argument, an "
    "approval without a name and a reason, a hash that is not the rows held now, or the audit view missing or "
    "not covering a model)",
    "apply": "0 published, re-planned (--replan) or checked (--check); 1 the backfill did not publish, "
    "or dbt failed; 2 refused "
    "(the plan file unreadable, edited after planning or stale: its scope or code differs from a plan "
    "made now; or a backfill refusal); 4 published, and downstream a data test, a rebuild or the "
    "check failed (pipeline status RUN_ID); 5 paused for the fresh data, as backfill",
    "status": "0 shown, or a replay plan written; 2 a malformed or unknown run id",
    "changelog": "0 listed",
    "rollback": "0 rolled back; 2 refused (the run is not published, or a table's main moved since); "
    "4 rolled back, and downstream a data test, a rebuild or the check failed",
    "compare": "0 equal; 1 any difference, or dbt failed; 2 refused (not a model of the kind, no table, "
    "bad scratch schema, unrouted dual run, different columns)",
    "explain": "0 explained; 1 dbt failed; 2 refused (not a model of the framework's kind, no table yet)",
    "report": "0 written (with --fail-on-alerts: and no alert); 2 --days or --runs out of range; "
    "3 written, and with --fail-on-alerts an alert fired (each printed: a failed run, a stale source, a failing "
    "alert test, late rows, a scan over its share, watermark drift, a failed backfill)",
    "maintain": "0 done; 2 refused (bad table name or argument)",
    "cluster": "start: 0 started, 1 failed, 2 refused (already running, stray processes, port in use); "
    "stop: 0; status: 0 running, 1 not running",
    "package-dir": "0 printed",
    "dags-dir": "0 printed",
}

HELP_OPTIONS = ["-h", "--help"]
CONTEXT = {"help_option_names": HELP_OPTIONS, "max_content_width": 110}


def command(group: click.Group, name: str, **kwargs):
    """`group.command(name)` whose --help ends with the command's exit codes (EXIT_CODES)."""
    return group.command(name, epilog=f"Exit codes: {EXIT_CODES[name]}.", **kwargs)


def refusing(refusals: Callable[[], tuple[type[Exception], ...]]):
    """Decorate a command whose body takes the console as `out`: the exceptions `refusals()` returns
    (imported when the command runs, not when the command line is built) print `refused:` and exit 2;
    a failed dbt invocation prints `failed:` and exits 1."""

    def decorate(body: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(body)
        def run(*args, **kwargs) -> int:
            from rich.markup import escape

            from pipeline.dbt import DbtError

            refused = refusals()
            out = kwargs["out"] = console()
            try:
                return body(*args, **kwargs)
            except refused as error:  # the message may hold a user's path or text: not markup
                out.print(f"[red]refused:[/] {escape(str(error))}")
                return 2
            except DbtError as error:
                out.print(f"[red]failed:[/] {escape(str(error))}")
                return 1

        return run

    return decorate


def console():
    """The rich console commands print their tables on (wide when not a terminal, as in CI logs)."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160)


@click.group(
    name="pipeline",
    context_settings=CONTEXT,
    epilog="Every command: 2 when its command line is refused (usage on stderr) or another process "
    "holds the embedded warehouse; 1 on an exception it does not catch. "
    "Reference: docs/reference/cli.md.",
)
def pipeline() -> None:
    """Tooling around the backfill_safe dbt project on Spark + Iceberg: landing, backfills,
    restatements, dual runs, explain, the status page, maintenance and the local cluster."""


def _register() -> None:
    from pipeline.cli import backfills, cluster, inspection, land, maintain, package, plans, restatements

    for module in (land, backfills, restatements, plans, inspection, maintain, cluster, package):
        module.register(pipeline)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv` (default: the process's) and return its exit code."""
    from pipeline import paths
    from pipeline.spark import WarehouseBusy

    args = sys.argv[1:] if argv is None else argv
    # every command but package-dir and dags-dir works on a dbt project: found, or refused before anything runs
    if (
        args
        and args[0] in pipeline.commands
        and args[0] not in ("package-dir", "dags-dir")
        and not set(args) & set(HELP_OPTIONS)
        and not (paths.PROJECT_DIR / "dbt_project.yml").is_file()
    ):
        print(
            f"error: no dbt_project.yml in {paths.PROJECT_DIR}: run pipeline from your dbt project's "
            "folder, or set DBT_PROJECT_DIR to it",
            file=sys.stderr,
        )
        return 2
    try:
        code = pipeline.main(args=argv, prog_name="pipeline", standalone_mode=False)
    except click.ClickException as error:
        error.show()
        return error.exit_code
    except click.Abort:  # Ctrl-C: the shell's code for SIGINT, not a command's failure (1)
        click.echo("aborted", err=True)
        return 130
    except WarehouseBusy as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return code or 0
