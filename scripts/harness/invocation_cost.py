"""What a dbt invocation of the project costs around its models: the hooks and the idle models.

    PYTHONPATH=scripts .venv/bin/python -m harness.invocation_cost --state DIR [--runs 3]

In one process (one warm JVM), on its own warehouse (DIR, made if missing: a build of both
examples from one customer, product and order of the shop), alternately: an idle `dbt run` of
the whole project (nothing landed since the last run), and a run of the shop after one order
with one line landed. Per run: the wall time, the models' summed execution time and each
on-run-start / on-run-end hook's (dbt's run_results.json); then the medians per kind of run, and
the statement budget of the last run of each kind (harness.statement_budget: per node, its
statements and their Spark seconds by what they are for).
The first pair pays the JVM's warm-up: compare the later ones, and only figures of one process
(docs/guides/run-the-tests.md, "Where an integration test's time goes").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

SHOP_ONLY = ("--exclude", "path:models/staging/rides", "path:models/intermediate/rides", "path:models/marts/rides")


def _rows(order_id: int, updated_at: datetime) -> dict[str, list[dict]]:
    ordered_at = datetime(2024, 1, 3, 10, tzinfo=UTC)
    return {
        "orders": [{"order_id": order_id, "customer_id": 1, "channel": "web", "status": "placed",
                    "ordered_at": ordered_at, "updated_at": updated_at, "is_deleted": False}],
        "order_items": [{"order_id": order_id, "order_item_id": 1, "product_id": 1, "quantity": 1,
                         "unit_price": Decimal("10.00"), "discount_amount": Decimal("0.00"),
                         "updated_at": updated_at, "is_deleted": False}],
    }


def _land(spark, folder: Path, tables: dict[str, list[dict]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline import contract
    from pipeline.land import land

    folder.mkdir(parents=True)
    files = []
    for name, rows in tables.items():
        path = folder / f"{name}.parquet"
        pq.write_table(pa.Table.from_pylist(rows, schema=contract.load().table(name).arrow_schema()), path)
        files.append(path)
    land(spark, files)


def _hooks(target: Path) -> tuple[dict[str, float], dict[str, float]]:
    """The hooks' times and the models' summed time; and each model's time."""
    results = json.loads((target / "run_results.json").read_text())["results"]
    figures = {"models": 0.0}
    models = {}
    for result in results:
        uid = result["unique_id"]
        if uid.startswith("operation."):
            # operation.<project>.<project>-on-run-end-<n>
            figures[uid.split("-on-", 1)[1]] = result["execution_time"]
        else:
            figures["models"] += result["execution_time"]
            models[uid.split(".")[-1]] = result["execution_time"]
    return figures, models


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, required=True, help="the warehouse's folder (made if missing)")
    parser.add_argument("--runs", type=int, default=3, help="pairs of runs (idle, one order)")
    parser.add_argument("--statements", action="store_true", help="list each statement of the last runs")
    parser.add_argument("--json", type=Path, help="write the runs and the last runs' statement budgets here")
    args = parser.parse_args(argv)
    state = args.state.resolve()
    os.environ["PIPELINE_STATE_DIR"] = str(state)
    os.environ["DBT_TARGET_PATH"] = str(state / "target")

    from harness.statement_budget import StatementBudget, markdown
    from pipeline.dbt import Dbt
    from pipeline.spark import get_spark

    spark = get_spark()
    dbt = Dbt(quiet=True)
    files = state / "invocation_cost" / str(time.time_ns())
    clock = datetime(2024, 1, 4, tzinfo=UTC)
    if not spark.catalog.tableExists("marts.fct_orders"):
        dbt.invoke("seed")
        _land(spark, files / "build", {
            "customers": [{"customer_id": 1, "email": "c1@example.com", "country": "DE", "segment": "consumer",
                           "updated_at": clock, "is_deleted": False}],
            "products": [{"product_id": 1, "product_name": "Product 1", "category": "toys",
                          "unit_cost": Decimal("1.00"), "updated_at": clock, "is_deleted": False}],
            **_rows(1, clock)})
        dbt.invoke("run")
    runs = []
    per_model = []
    budgets: dict[str, dict] = {}
    for n in range(args.runs):
        for kind in ("idle", "one order"):
            command = ["run"]
            if kind == "one order":
                _land(spark, files / f"order-{n}", _rows(time.time_ns() % 10**9, clock + timedelta(days=n + 1)))
                command += SHOP_ONLY
            budget = StatementBudget(dbt)
            with budget.recording():
                started = time.perf_counter()
                nodes = dbt.invoke(*command)
                wall = time.perf_counter() - started
            budgets[kind] = {**budget.report(nodes), "statements": budget.statements}  # the last of each kind
            hooks, models = _hooks(state / "target")
            runs.append({"run": kind, "wall": wall, **hooks})
            per_model.append((kind, models))
    names = [k for k in runs[0] if k not in ("run", "wall")]
    print(f"{'run':10} {'wall':>6} " + " ".join(f"{name:>11}" for name in names))
    for run in runs:
        print(f"{run['run']:10} {run['wall']:6.1f} " + " ".join(f"{run.get(name, 0):11.2f}" for name in names))
    for kind in ("idle", "one order"):
        later = [run for run in runs if run["run"] == kind][1:] or [run for run in runs if run["run"] == kind]
        print(f"median of the later {kind} runs: wall {statistics.median(r['wall'] for r in later):.1f} s, "
              + ", ".join(f"{name} {statistics.median(r.get(name, 0) for r in later):.2f}" for name in names))
    for kind in ("idle", "one order"):
        models = [m for k, m in per_model if k == kind][1:] or [m for k, m in per_model if k == kind]
        medians = {name: statistics.median(m.get(name, 0) for m in models) for name in models[0]}
        print(f"each model's median in the later {kind} runs, slowest first: "
              + ", ".join(f"{name} {seconds:.2f}" for name, seconds in
                          sorted(medians.items(), key=lambda item: -item[1])))
    for kind, report in budgets.items():
        print("\n".join(["", *markdown(report, f"Statement budget of the last {kind} run")]))
    if args.statements:
        for kind, report in budgets.items():
            print(f"\nStatements of the last {kind} run, per node (class, seconds, text cut at 160):")
            for s in report["statements"]:
                print(f"  {s['node'].split('.')[-1]:<28} {s['class']:<13} {s['seconds']:6.2f}  {s['sql']}")
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "budgets": budgets}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
