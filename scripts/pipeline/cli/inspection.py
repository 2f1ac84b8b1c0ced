"""`pipeline compare | explain | report`: look at a model or the warehouse without changing either."""

from __future__ import annotations

from pathlib import Path

import click

from pipeline.cli import command, console, refusing

_JSON = click.Path(dir_okay=False, writable=True, path_type=Path)


@click.argument("model")
@click.option(
    "--scratch-schema",
    default="dual_run",
    show_default=True,
    metavar="S",
    help="Schema of the full-refresh build (lower-case letters, digits, _; not the model's own).",
)
@click.option("--keep", is_flag=True, help="Keep the scratch table for inspection.")
@click.option("--json", "json_file", type=_JSON, metavar="FILE", help="Also write the comparison as JSON.")
@refusing(lambda: _refusals("compare"))
def compare(model: str, scratch_schema: str, keep: bool, json_file: Path | None, out) -> int:
    """The dual run: build MODEL (an incremental model, e.g. fct_order_item) by full refresh into
    --scratch-schema (its upstream models are read where they are; no watermark moves) and
    compare it with the incremental table by unique key: identical, modified, missing and extra
    row counts, mismatches per column, sample keys. The migration path from full refresh to
    incremental."""
    from rich.table import Table

    from pipeline.backfill.plan import PlanError, parse_selectors

    if parse_selectors(model) != [model] or "+" in model:
        raise PlanError(f"compare takes one model name, got {model!r}")
    from pipeline.compare import compare as dual_run
    from pipeline.dbt import Dbt
    from pipeline.engine import get_engine

    result = dual_run(get_engine(), Dbt(quiet=True), model, scratch_schema, keep=keep)
    table = Table(
        title=f"{result.incremental_table} (incremental) vs {result.full_refresh_table} "
        f"(full refresh), by {result.unique_key}"
    )
    for column in ("identical", "modified", "missing", "extra"):
        table.add_column(column, justify="right")
    table.add_row(*(str(getattr(result, c)) for c in ("identical", "modified", "missing", "extra")))
    out.print(table)
    for column, count in result.column_mismatches.items():
        out.print(f"  {column}: {count} modified rows differ")
    for state, keys in result.sample_keys.items():
        out.print(f"  {state} keys (sample): {', '.join(keys)}")
    if json_file:
        json_file.write_text(result.to_json())
    out.print("[green]equal[/]" if result.equal else "[red]different[/]")
    return 0 if result.equal else 1


@click.argument("models", nargs=-1, required=True, metavar="MODEL...")
@click.option(
    "--json",
    "json_file",
    type=_JSON,
    metavar="FILE",
    help="Also write the explanation as JSON (per model: statements, planned scans, ran).",
)
@refusing(lambda: _refusals("explain"))
def explain(models: tuple[str, ...], json_file: Path | None, out) -> int:
    """What the next daily run of each MODEL (incremental, of the framework's kind) will read,
    before it runs: one `dbt run` with var explain_next_run reads what the run reads to find its
    scope and stage its select (shown as `ran`), then plans its select and its MERGE (data
    files, delete files and partitions Iceberg plans per table under the pushed filters, and
    those filters). Writes nothing to the models' tables, moves no watermark, records no run."""
    from pipeline.explain import explain as plan_next_run
    from pipeline.explain import resolve

    resolve(list(models))  # names checked before Spark starts
    from pipeline.dbt import Dbt
    from pipeline.engine import get_engine

    explained = plan_next_run(get_engine(), Dbt(quiet=True), list(models))
    for explanation in explained:
        _print_explanation(out, explanation)
    if json_file:
        import dataclasses
        import json

        json_file.write_text(json.dumps([dataclasses.asdict(e) for e in explained], indent=2, default=str))
    return 0


@click.option(
    "--out", "out_file", type=_JSON, metavar="FILE", help="HTML file to write. Default: <state dir>/status.html."
)
@click.option(
    "--days",
    type=int,
    default=14,
    show_default=True,
    help="Event dates of each declared model's measures, source vs mart, 1..366.",
)
@click.option("--runs", type=int, default=30, show_default=True, help="Latest run records shown, 1..1000.")
@click.option(
    "--fail-on-alerts",
    is_flag=True,
    help="Also print each alert on a line of its own, and exit 3 when there is any (a scheduler's task "
    "that fails visibly).",
)
def report(out_file: Path | None, days: int, runs: int, fail_on_alerts: bool) -> int:
    """Write the status page, one static HTML file: freshness, watermarks, runs, daily totals,
    backfills, alerts. With --fail-on-alerts, the alerts are printed too, and any makes it exit 3."""
    if not 1 <= days <= 366 or not 1 <= runs <= 1000:
        console().print(f"[red]refused:[/] --days must be 1..366 and --runs 1..1000 (got {days} and {runs})")
        return 2
    from pipeline import paths
    from pipeline import report as status_page
    from pipeline.dbt import Dbt
    from pipeline.engine import get_engine

    page = out_file or paths.state_dir() / "status.html"
    written = status_page.write(get_engine(), Dbt(quiet=True), page, days, runs)
    print(
        f"wrote {page}: {len(written.pipelines)} pipelines, {len(written.runs)} runs, "
        f"{len(written.backfills)} backfills, {len(written.alerts)} alerts"
    )
    if not fail_on_alerts:
        return 0
    for alert in written.alerts:  # whole, not wrapped: a scheduler's log keeps each on its line
        print(f"alert: {alert}")
    return 3 if written.alerts else 0


def register(group: click.Group) -> None:
    """The commands of this module, each with its --help's exit codes (pipeline.cli.EXIT_CODES)."""
    for function, name, short_help in (
        (compare, "compare", "Dual run: full refresh in a scratch schema vs the incremental table."),
        (explain, "explain", "What the next daily run of models will read, before it runs."),
        (report, "report", "Write the status page: one static HTML file."),
    ):
        command(group, name, short_help=short_help)(function)


def _refusals(command: str) -> tuple[type[Exception], ...]:
    from pipeline.backfill.plan import PlanError

    if command == "compare":
        from pipeline.compare import CompareError

        return PlanError, CompareError
    from pipeline.explain import ExplainError

    return (ExplainError,)


def _print_explanation(out, explanation) -> None:
    from rich.table import Table

    def of(part: int, whole: int | None) -> str:
        """Shown "part of whole" only when part is a share of whole: a count above it (a scan of
        another snapshot than the table's current one) is shown beside the table's."""
        if whole is None:
            return f"{part:,}"
        return f"{part:,} of {whole:,}" if part <= whole else f"{part:,} (the table has {whole:,})"

    table = Table(title=f"{explanation.model} ({explanation.relation}): its next daily run", title_justify="left")
    for column in ("step", "table", "role", "scans", "data files", "partitions", "rows", "filters"):
        table.add_column(column, justify="right" if column in ("scans", "data files", "rows") else "left")
    for read in explanation.ran:
        # the files summed over several scans of a table are no share of it: the largest scan's are
        files = of(read.largest_scan_files, read.table_data_files) + (
            f" (largest of {read.scans} scans; {read.data_files:,} planned over all)" if read.scans > 1 else ""
        )
        table.add_row(
            "ran: scope, staging",
            read.table,
            read.role,
            str(read.scans),
            files,
            "",
            f"{read.rows:,}",
            "; ".join(read.filters),
        )
    for scan in explanation.scans:
        shown = ", ".join(scan.partitions[:5]) + (
            f", ... {len(scan.partitions) - 5} more" if len(scan.partitions) > 5 else ""
        )
        partitions = (
            f"{of(len(scan.partitions), scan.table_partitions)}: {shown}" if scan.partitioned else "unpartitioned"
        )
        filters = (scan.filters or "") + (f" | at run time: {scan.runtime_filters}" if scan.runtime_filters else "")
        table.add_row(
            f"{scan.statement}, planned",
            scan.table,
            scan.role,
            "1",
            of(scan.data_files, scan.table_data_files)
            + (f" (+{scan.delete_files} delete)" if scan.delete_files else ""),
            partitions,
            "",
            filters,
        )
    out.print(table)
    for statement, detail in explanation.statements:
        if detail:
            out.print(f"  {statement}: {detail}")
    if explanation.ran_unknown:
        out.print(f"  [yellow]the reads that ran are not known:[/] {explanation.ran_unknown}")
    predicate = explanation.merge_predicate()
    out.print(
        f"  the MERGE's pruning predicates: {predicate}"
        if predicate
        else "  no MERGE: the run writes nothing to its table"
    )
