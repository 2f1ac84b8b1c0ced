"""`pipeline`: the project's command line.

    pipeline land FILE... [--table T]       validate and append files to the raw tables
    pipeline backfill | status | rollback   windowed, isolated, reversible backfills (see --help)
    pipeline restate [--select] --reason R  backfill only the dates of rows late beyond their window
    pipeline compare MODEL                  dual run: full refresh in a scratch schema vs the incremental table
    pipeline explain MODEL...               what the next daily run of models will read, before it runs
    pipeline report [--out FILE]            the status page: one static HTML file
    pipeline maintain [options]             compact small files, expire snapshots, keep backfills reversible
    pipeline cluster start|stop|status      the local Spark cluster + Thrift Server of the `cluster` target

The shop example's sample and main job are `python -m sample generate|main` (scripts/sample/).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline import cluster


# Each command's exit codes, shown at the end of its --help (docs/reference/cli.md says the same,
# with the cases; a fast test keeps the two in step). Every command also exits 2 when argparse
# refuses its command line, and 1 on an exception it does not catch.
EXIT_CODES = {
    "land": "0 landed (or skipped); 2 a file or the contract refused, nothing appended",
    "backfill": "0 published, dry run printed, or abandoned; 1 the gate or a window failed; "
                "2 refused (bad argument, another run holds the lock, main moved)",
    "restate": "0 published, nothing to restate, or dry run; 1 the restatement's backfill did not publish, "
               "or dbt failed; 2 refused (a bad argument, a model without a declaration, the audit view missing "
               "or not covering a model, a model not built or not auditable, or a backfill refusal)",
    "status": "0 shown; 2 a malformed or unknown run id",
    "rollback": "0 rolled back; 2 refused (the run is not published, or a table's main moved since)",
    "compare": "0 equal; 1 any difference, or dbt failed; 2 refused (not a model of the kind, no table, "
               "bad scratch schema, unrouted dual run, different columns)",
    "explain": "0 explained; 1 dbt failed; 2 refused (not a model of the framework's kind, no table yet)",
    "report": "0 written; 2 --days or --runs out of range",
    "maintain": "0 done; 2 refused (bad table name or argument)",
    "cluster": "start: 0 started, 1 failed, 2 refused (already running, stray processes, port in use); "
               "stop: 0; status: 0 running, 1 not running",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pipeline", description="Tooling around the backfill_safe dbt project on Spark + Iceberg."
    )
    commands = _Commands(parser.add_subparsers(dest="command", required=True))

    land = commands.add_parser("land", help="validate files against the raw contract and append them")
    land.add_argument("files", nargs="+", type=Path, help="Parquet or CSV files, or day folders holding them")
    land.add_argument("--table", help="raw table to append to, as table or source.table (default: from each "
                      "file's name); the raw tables are the sources declaring config.meta.backfill_safe")

    backfill = commands.add_parser(
        "backfill",
        help="restate [start, end) of event dates in windows, isolated on Iceberg branches, published atomically",
        description="Restate the models' rows whose event date is in [--start, --end): one `dbt run --vars` per "
        "window of at most --batch-days days, all writes on an Iceberg branch per table, data tests on the "
        "branches, then every table published at once (or none). Checkpointed (--resume), reversible (rollback).",
    )
    backfill.add_argument("--start", help="first event date, YYYY-MM-DD (inclusive)")
    backfill.add_argument("--end", help="last event date, YYYY-MM-DD (exclusive)")
    backfill.add_argument("--select", help="models to restate (space or comma separated); everything downstream "
                          "of them is included; default: every incremental model")
    backfill.add_argument("--batch-days", type=int, default=7,
                          help="days per window (default %(default)s; at most the project var backfill_max_batch_days)")
    backfill.add_argument("--reason", help="why history is rewritten; required, recorded with the run")
    backfill.add_argument("--dry-run", action="store_true",
                          help="print windows, models and what each window may rewrite (Iceberg metadata only); write nothing")
    backfill.add_argument("--resume", metavar="RUN_ID", help="continue an interrupted or failed run after its last finished window")
    backfill.add_argument("--abandon", metavar="RUN_ID", help="drop an unpublished run's branches and release its lock")

    restate = commands.add_parser(
        "restate", help="backfill only the order dates of rows that arrived after their restatement window",
        description="Reads audit_unreflected_changes (fact keys whose current source state is not in the mart "
                    "and that the next daily run will not pick up, within var restatement_horizon_days of the "
                    "watermark) and backfills exactly their order dates through the backfill machinery: branches, "
                    "gate, atomic publish, rollback.")
    restate.add_argument("--select", help="restrict to these facts (space or comma separated)")
    restate.add_argument("--batch-days", type=int, default=7,
                         help="largest window in days; consecutive dates share windows (default 7)")
    restate.add_argument("--reason", help="why history is rewritten; required, recorded with the run")
    restate.add_argument("--dry-run", action="store_true",
                         help="print the keys per model and why, the dates and windows; write nothing")

    compare = commands.add_parser(
        "compare", help="dual run: build a model by full refresh into a scratch schema and diff it with the incremental table",
        description="Builds MODEL by full refresh into --scratch-schema (its upstream models are read where they are; "
                    "no watermark moves) and compares it with the incremental table by unique key: identical, "
                    "modified, missing and extra row counts, mismatches per column, sample keys: the migration path from "
                    "full refresh to incremental.")
    compare.add_argument("model", help="an incremental model, e.g. fct_order_item")
    compare.add_argument("--scratch-schema", default="dual_run", help="schema of the full-refresh build (default dual_run)")
    compare.add_argument("--keep", action="store_true", help="keep the scratch table for inspection")
    compare.add_argument("--json", type=Path, metavar="FILE", help="also write the comparison as JSON")

    explain = commands.add_parser(
        "explain", help="what the next daily run of models will read, before it runs: files and partitions per "
        "table, the MERGE's pruning predicates",
        description="Plans the next daily run of each MODEL without running it: one `dbt run` with var "
        "explain_next_run, which reads what the run reads to find its scope and stage its select (shown as `ran`), "
        "then plans its select and its MERGE (data files, delete files and partitions Iceberg plans per table under "
        "the pushed filters, and those filters). Writes nothing to the models' tables, moves no watermark, records "
        "no run.")
    explain.add_argument("models", nargs="+", metavar="MODEL", help="incremental models of the framework's kind")
    explain.add_argument("--json", type=Path, metavar="FILE", help="also write the explanation as JSON")

    report = commands.add_parser(
        "report", help="write the status page: one static HTML file (freshness, watermarks, runs, daily totals, backfills, alerts)")
    report.add_argument("--out", type=Path, default=None, help="HTML file to write (default <state dir>/status.html)")
    report.add_argument("--days", type=int, default=14, help="event dates of each declared model's measures, source vs mart (default 14)")
    report.add_argument("--runs", type=int, default=30, help="latest run records shown (default 30)")

    status = commands.add_parser("status", help="list backfill runs, or one run's windows and tables")
    status.add_argument("run_id", nargs="?", help="a run id (bf_...)")

    rollback = commands.add_parser("rollback", help="restore every table of a published backfill to its snapshot before publishing")
    rollback.add_argument("run_id", help="a run id (bf_...)")

    maintain = commands.add_parser(
        "maintain", help="compact small files and expire old snapshots, keeping every backfill reversible",
        description="Compact small files (Iceberg rewrite_data_files) and expire snapshots older than --expire-days "
        "(expire_snapshots) of the raw and mart tables. Tables held by a running backfill are skipped; snapshots a "
        "published backfill's rollback still needs are kept.")
    maintain.add_argument("--tables", help="schema.table names (space or comma separated); default: every Iceberg "
                          "table of the raw and marts schemas")
    maintain.add_argument("--no-compact", action="store_true", help="only expire snapshots")
    maintain.add_argument("--expire-days", type=int, default=7, metavar="N",
                          help="expire snapshots older than N days (default %(default)s; -1: expire nothing)")
    maintain.add_argument("--retain-last", type=int, default=5, metavar="N",
                          help="always keep the newest N snapshots of each table (default %(default)s)")

    cluster_parser = commands.add_parser(
        "cluster", help="start, stop or show the local Spark standalone cluster and Thrift Server (the `cluster` target)",
        description="A Spark master, two single-core workers and a Spark Thrift Server on them, all on 127.0.0.1, "
        "with the embedded target's Iceberg settings and their own metastore and warehouse in <state dir>/cluster/. "
        "`start` prints the exports dbt needs (--target cluster).")
    cluster.add_arguments(cluster_parser)
    return parser


class _Commands:
    """argparse's subparsers, each given its exit codes (EXIT_CODES) as the end of its --help."""

    def __init__(self, subparsers) -> None:
        self._subparsers = subparsers

    def add_parser(self, name: str, **kwargs) -> argparse.ArgumentParser:
        return self._subparsers.add_parser(name, epilog=f"Exit codes: {EXIT_CODES[name]}.", **kwargs)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from pipeline.spark import WarehouseBusy

    try:
        return _dispatch(args)
    except WarehouseBusy as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "land":
        from pipeline.land import LandingError, land
        from pipeline.engine import get_engine

        from pipeline.dbt import Dbt

        files = [f for p in args.files for f in (sorted(p.iterdir()) if p.is_dir() else [p])]
        try:
            engine = get_engine()
            # the contract is the sources yml as it is now, read from the manifest
            Dbt(quiet=True).invoke("parse")
            for landed in land(engine, files, table=args.table):
                note = "already landed, skipped" if landed.skipped else f"{landed.rows} rows"
                print(f"{landed.path} -> {landed.relation} ({landed.table}): {note}")
        except LandingError as error:
            print(f"error: {error}; nothing was appended", file=sys.stderr)
            return 2
        return 0
    if args.command in ("backfill", "restate", "status", "rollback"):
        return _backfill_command(args)
    if args.command == "maintain":
        return _maintain_command(args)
    if args.command == "cluster":
        return cluster.run(args)
    if args.command == "compare":
        return _compare_command(args)
    if args.command == "report":
        return _report_command(args)
    return _explain_command(args)


def _maintain_command(args: argparse.Namespace) -> int:
    import re
    from datetime import timedelta

    from rich.console import Console
    from rich.table import Table

    console = Console(width=None if sys.stdout.isatty() else 160)
    from pipeline.iceberg import TABLE_NAME  # pyspark's Python side only: no JVM yet

    tables = [t for t in re.split(r"[\s,]+", args.tables or "") if t]
    bad = [t for t in tables if not TABLE_NAME.fullmatch(t)]
    if bad or args.expire_days < -1 or args.retain_last < 1:
        problem = (f"--tables {bad[0]!r} is not a schema.table name" if bad else
                   "--expire-days must be -1 or more" if args.expire_days < -1 else "--retain-last must be at least 1")
        console.print(f"[red]refused:[/] {problem}")
        return 2
    from pipeline.maintain import maintain
    from pipeline.engine import get_engine

    try:
        results = maintain(get_engine(), tables or None, compact=not args.no_compact,
                           expire_older_than=None if args.expire_days < 0 else timedelta(days=args.expire_days),
                           retain_last=args.retain_last)
    except ValueError as error:
        console.print(f"[red]refused:[/] {error}")
        return 2
    table = Table(title="maintenance")
    for column in ("table", "data files before", "after", "rewritten", "delete files before", "after",
                   "snapshots expired", "note"):
        table.add_column(column)
    for r in results:
        note = r.skipped or (f"kept snapshots for rollback of {r.kept_for_rollback}" if r.kept_for_rollback else "")
        table.add_row(r.table, str(r.files_before), str(r.files_after), str(r.rewritten_files),
                      str(r.delete_files_before), str(r.delete_files_after), str(r.expired_snapshots), note)
    console.print(table)
    return 0


def _report_command(args: argparse.Namespace) -> int:
    if not 1 <= args.days <= 366 or not 1 <= args.runs <= 1000:
        print("refused: --days must be 1..366 and --runs 1..1000", file=sys.stderr)
        return 2
    from pipeline import paths, report
    from pipeline.dbt import Dbt
    from pipeline.engine import get_engine

    out = args.out or paths.state_dir() / "status.html"
    written = report.write(get_engine(), Dbt(quiet=True), out, args.days, args.runs)
    print(f"wrote {out}: {len(written.pipelines)} pipelines, {len(written.runs)} runs, "
          f"{len(written.backfills)} backfills, {len(written.alerts)} alerts")
    return 0


def _compare_command(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from pipeline.backfill.plan import PlanError, parse_selectors

    console = Console(width=None if sys.stdout.isatty() else 160)
    try:
        if parse_selectors(args.model) != [args.model] or "+" in args.model:
            raise PlanError(f"compare takes one model name, got {args.model!r}")
    except PlanError as error:
        console.print(f"[red]refused:[/] {error}")
        return 2
    from pipeline.compare import CompareError, compare
    from pipeline.dbt import Dbt, DbtError
    from pipeline.engine import get_engine

    try:
        result = compare(get_engine(), Dbt(quiet=True), args.model, args.scratch_schema, keep=args.keep)
    except CompareError as error:
        console.print(f"[red]refused:[/] {error}")
        return 2
    except DbtError as error:
        console.print(f"[red]failed:[/] {error}")
        return 1
    table = Table(title=f"{result.incremental_table} (incremental) vs {result.full_refresh_table} (full refresh), "
                        f"by {result.unique_key}")
    for column in ("identical", "modified", "missing", "extra"):
        table.add_column(column, justify="right")
    table.add_row(*(str(getattr(result, c)) for c in ("identical", "modified", "missing", "extra")))
    console.print(table)
    for column, count in result.column_mismatches.items():
        console.print(f"  {column}: {count} modified rows differ")
    for state, keys in result.sample_keys.items():
        console.print(f"  {state} keys (sample): {', '.join(keys)}")
    if args.json:
        args.json.write_text(result.to_json())
    console.print("[green]equal[/]" if result.equal else "[red]different[/]")
    return 0 if result.equal else 1


def _explain_command(args: argparse.Namespace) -> int:
    import dataclasses
    import json

    from rich.console import Console
    from rich.table import Table

    from pipeline.explain import ExplainError, explain, resolve

    console = Console(width=None if sys.stdout.isatty() else 160)
    try:
        resolve(args.models)  # names checked before Spark starts
    except ExplainError as error:
        console.print(f"[red]refused:[/] {error}")
        return 2
    from pipeline.dbt import Dbt, DbtError
    from pipeline.engine import get_engine

    try:
        explained = explain(get_engine(), Dbt(quiet=True), args.models)
    except ExplainError as error:
        console.print(f"[red]refused:[/] {error}")
        return 2
    except DbtError as error:
        console.print(f"[red]failed:[/] {error}")
        return 1

    def of(part: int, whole: int | None) -> str:
        return f"{part:,}" if whole is None else f"{part:,} of {whole:,}"

    for explanation in explained:
        table = Table(title=f"{explanation.model} ({explanation.relation}): its next daily run", title_justify="left")
        for column in ("step", "table", "role", "scans", "data files", "partitions", "rows", "filters"):
            table.add_column(column, justify="right" if column in ("scans", "data files", "rows") else "left")
        for read in explanation.ran:
            table.add_row("ran: scope, staging", read.table, read.role, str(read.scans),
                          of(read.data_files, read.table_data_files), "", f"{read.rows:,}", "; ".join(read.filters))
        for scan in explanation.scans:
            shown = ", ".join(scan.partitions[:5]) + (f", ... {len(scan.partitions) - 5} more"
                                                      if len(scan.partitions) > 5 else "")
            partitions = (f"{of(len(scan.partitions), scan.table_partitions)}: {shown}" if scan.partitioned
                          else "unpartitioned")
            filters = (scan.filters or "") + (f" | at run time: {scan.runtime_filters}" if scan.runtime_filters else "")
            table.add_row(f"{scan.statement}, planned", scan.table, scan.role, "1",
                          of(scan.data_files, scan.table_data_files)
                          + (f" (+{scan.delete_files} delete)" if scan.delete_files else ""),
                          partitions, "", filters)
        console.print(table)
        for statement, detail in explanation.statements:
            if detail:
                console.print(f"  {statement}: {detail}")
        if explanation.ran_unknown:
            console.print(f"  [yellow]the reads that ran are not known:[/] {explanation.ran_unknown}")
        predicate = explanation.merge_predicate()
        console.print(f"  the MERGE's pruning predicates: {predicate}" if predicate
                      else "  no MERGE: the run writes nothing to its table")
    if args.json:
        args.json.write_text(json.dumps([dataclasses.asdict(e) for e in explained], indent=2, default=str))
    return 0


def _backfill_command(args: argparse.Namespace) -> int:
    from rich.console import Console

    from pipeline.backfill.plan import PlanError, check_run_id, parse_date, parse_selectors, check_reason
    from pipeline.backfill.runner import Backfill, BackfillRefused
    from pipeline.dbt import Dbt, DbtError
    from pipeline.engine import get_engine

    console = Console(width=None if sys.stdout.isatty() else 160)
    try:
        # everything from the command line is checked before Spark or dbt starts
        if args.command in ("status", "rollback") and args.run_id:
            check_run_id(args.run_id)
        if args.command == "backfill":
            modes = [bool(args.resume), bool(args.abandon), bool(args.start or args.end)]
            if sum(modes) != 1:
                raise PlanError("give either --start/--end (a new backfill), --resume RUN_ID or --abandon RUN_ID")
            if args.resume or args.abandon:
                if args.dry_run:
                    # a dry run plans a new backfill; resuming or abandoning one has nothing to plan,
                    # and ignoring the flag would do for real what was asked as a rehearsal
                    raise PlanError("--dry-run plans a new backfill (--start/--end); it cannot be combined "
                                    f"with {'--resume' if args.resume else '--abandon'}")
                check_run_id(args.resume or args.abandon)
            else:
                parse_date(args.start, "--start")
                parse_date(args.end, "--end")
                parse_selectors(args.select)
                if not args.dry_run:
                    check_reason(args.reason)
        if args.command == "restate":
            parse_selectors(args.select)
            if not args.dry_run:
                check_reason(args.reason)
        runner = Backfill(Dbt(quiet=True), get_engine(), console)
        if args.command == "restate":
            restatement = runner.restate_plan(args.select, args.batch_days)
            unaudited = runner.unaudited_models()
            if unaudited and not args.select:
                console.print("not audited for late changes (no config.meta.backfill_safe), so not restated: "
                              + ", ".join(unaudited))
            if restatement is None:
                console.print("nothing to restate: every change up to the restatement window is in the marts")
                return 0
            console.print(runner.restate_keys(args.select))
            impacts = runner.restate_impact(args.select)
            console.print(runner.impact_table(impacts))
            console.print(f"restating {len(restatement.windows)} windows: "
                          + ", ".join(f"{w.start} .. {w.end}" for w in restatement.windows))
            if args.dry_run:
                console.print(runner.dry_run(restatement))
                return 0
            run_id = runner.restate(restatement, args.reason, impacts)
            for table in runner.status(run_id):
                console.print(table)
            return 0 if runner.status_of(run_id) == "published" else 1
        if args.command == "status":
            for table in runner.status(args.run_id):
                console.print(table)
            if not args.run_id:
                from pipeline.metrics import metrics_table, model_metrics

                console.print(metrics_table(model_metrics(runner.spark)))
            return 0
        if args.command == "rollback":
            runner.rollback(args.run_id)
            console.print(f"rolled back {args.run_id}")
            return 0
        if args.resume:
            run_id = runner.resume(args.resume)
        elif args.abandon:
            runner.abandon(args.abandon)
            console.print(f"abandoned {args.abandon}")
            return 0
        else:
            plan = runner.plan(args.start, args.end, args.select, args.batch_days)
            if args.dry_run:
                console.print(runner.dry_run(plan))
                return 0
            run_id = runner.start(plan, args.reason)
        for table in runner.status(run_id):
            console.print(table)
        return 0 if runner.status_of(run_id) == "published" else 1
    except (PlanError, BackfillRefused) as error:
        console.print(f"[red]refused:[/] {error}")
        return 2
    except DbtError as error:
        console.print(f"[red]failed:[/] {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
