"""Shared fixtures: one embedded Spark session and one in-process dbt for the whole run.

The warehouse lives in a temporary state folder (PIPELINE_STATE_DIR), never in the project's
own `.warehouse/`. Tests that need a clean warehouse drop the project's tables first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

from helpers import (MAIN_JOB_SAMPLE, SHOP_MARTS, MainJobRun, SharedBuild, Warehouse,  # noqa: E402
                     mart_checksums, warehouse_replaced)


JVM_FIXTURES = {"spark", "dbt", "warehouse", "spark_empty", "main_job_sample"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tiers: a test marked `fast` (the developer's loop) must not start the JVM; every other
    test is `integration`. A fast test that asks for the Spark session is an error at
    collection, so the fast tier cannot grow a JVM start unnoticed."""
    for item in items:
        if item.get_closest_marker("fast"):
            jvm = JVM_FIXTURES & set(getattr(item, "fixturenames", ()))
            if jvm:
                raise pytest.UsageError(f"{item.nodeid} is marked fast but uses the fixture(s) {sorted(jvm)}, "
                                        "which start Spark: drop the fast marker")
        else:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("state")
    os.environ["PIPELINE_STATE_DIR"] = str(path)
    # dbt's target folder too (manifest, partial parse): pytest-xdist workers run side by side
    os.environ["DBT_TARGET_PATH"] = str(path / "target")
    return path


@pytest.fixture(scope="session")
def spark(state_dir: Path):
    from pipeline.spark import get_spark

    return get_spark()


@pytest.fixture(scope="session")
def dbt(spark):
    from pipeline.dbt import Dbt

    return Dbt(quiet=True)


@pytest.fixture
def warehouse(spark, dbt, tmp_path: Path) -> Warehouse:
    """An empty warehouse, for one test."""
    return Warehouse.empty(spark, dbt, tmp_path)


@pytest.fixture(scope="session")
def main_job_sample(spark, dbt) -> MainJobRun:
    """The main job, run once per session on the embedded Spark (it starts from an empty
    warehouse), with what it printed and the marts as it left them."""
    import io

    from rich.console import Console

    from sample import main_job
    from sample.generate import GeneratorConfig

    out = io.StringIO()
    warehouse_replaced()  # the job's reset drops every table, with its files
    code = main_job.run(GeneratorConfig(**MAIN_JOB_SAMPLE), Console(file=out, width=200))
    return MainJobRun(code, out.getvalue(), mart_checksums(lambda sql: [tuple(r) for r in spark.sql(sql).collect()]),
                      {t: spark.table(f"marts.{t}").columns for t in SHOP_MARTS})


@pytest.fixture(scope="session")
def examples_built(spark, dbt, tmp_path_factory: pytest.TempPathFactory) -> SharedBuild:
    """Both example domains' base events (domains.py: the shop's three orders, the rides' three
    trips) landed into an empty warehouse and every model built: once per session, shared by
    test_rules_by_domain and test_rides_example (`fresh()` before each test)."""
    from domains import DOMAINS

    def build() -> Warehouse:
        warehouse = Warehouse.empty(spark, dbt, tmp_path_factory.mktemp("examples"))
        warehouse.land(**{table: rows for domain in DOMAINS for table, rows in domain.base().items()})
        warehouse.dbt_run()
        return warehouse

    return SharedBuild(build)
