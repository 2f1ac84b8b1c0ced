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

from helpers import Warehouse  # noqa: E402


JVM_FIXTURES = {"spark", "dbt", "warehouse", "spark_empty"}


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
