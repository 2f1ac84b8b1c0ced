"""dbt's own adapter test suite (dbt-tests-adapter), run against the embedded Spark with
Iceberg and the framework's macros installed as a package and dispatched first, as a team's
project would (docs/guides/adopt-the-framework.md). Its own tier, its own process (one Spark
session per process, its own Derby metastore in a temporary folder):

    .venv/bin/python -m pytest tests/adapter

Each test class writes a dbt project (dbt.tests.fixtures.project); `framework_installed` puts
the framework's macros in its dbt_packages/ and the dispatch search order in its dbt_project.yml
before dbt loads it. The package is the framework's macros only: its project hooks are left
out because dbt's suite counts every run's results, and a package's on-run-start/-end hooks are
results of every run (they do nothing for a run of plain models: test_plain_models.py).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

pytest_plugins = ["dbt.tests.fixtures.project"]

FRAMEWORK_DIR = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(FRAMEWORK_DIR / "scripts"))
STATE_DIR = Path(tempfile.mkdtemp(prefix="adapter-suite-"))
os.environ["PIPELINE_STATE_DIR"] = str(STATE_DIR)
os.environ.pop("DBT_PROJECT_DIR", None)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    shutil.rmtree(STATE_DIR, ignore_errors=True)


@pytest.fixture(scope="class")
def dbt_profile_target() -> dict:
    """The embedded target of profiles/profiles.yml: Spark in this process, Iceberg's session
    catalog over a Derby metastore in STATE_DIR."""
    from pipeline.spark import spark_conf

    return {"type": "spark", "method": "session", "host": "NA", "schema": "adapter_suite",
            "threads": 1, "server_side_parameters": spark_conf()}


@pytest.fixture(scope="class", autouse=True)
def framework_installed(project_root, dbt_project_yml) -> None:
    package = Path(project_root) / "dbt_packages" / "backfill_safe"
    package.mkdir(parents=True)
    (package / "dbt_project.yml").write_text(yaml.safe_dump(
        {"name": "backfill_safe", "version": "0.1.0", "config-version": 2, "macro-paths": ["macros"]}))
    (package / "macros").symlink_to(FRAMEWORK_DIR / "macros")
    project_yml = Path(project_root) / "dbt_project.yml"
    config = yaml.safe_load(project_yml.read_text())
    config["dispatch"] = [{"macro_namespace": "dbt", "search_order": [config["name"], "backfill_safe", "dbt"]}]
    project_yml.write_text(yaml.safe_dump(config))
