"""Where the project and its local state live.

Everything the embedded warehouse writes (Derby metastore, Iceberg warehouse, landed files,
logs) goes under one git-ignored state folder, `.warehouse/` by default, overridable with
PIPELINE_STATE_DIR (the tests point it at a temporary folder).
"""

from __future__ import annotations

import os
from pathlib import Path

# Where the framework's dbt package is (its dbt_project.yml, macros, and jars/: the JVM classes
# and the Iceberg runtime the profile names): installed from a wheel, site-packages/backfill_safe
# beside this package (scripts/build_package.py); in a checkout (scripts/bootstrap.sh installs it
# editable), the repository itself, whose examples live there too.
_INSTALLED = Path(__file__).resolve().parents[1] / "backfill_safe"
INSTALLED = (_INSTALLED / "dbt_project.yml").is_file()
FRAMEWORK_DIR = _INSTALLED if INSTALLED else Path(__file__).resolve().parents[2]
JARS_DIR = FRAMEWORK_DIR / "jars"
# The framework's Airflow DAGs: files an Airflow parses, shipped inside this package (pipeline.dags)
DAGS_DIR = Path(__file__).resolve().parent / "dags"
DEFAULT_JAR = JARS_DIR / "iceberg-spark-runtime.jar"
JVM_JAR = JARS_DIR / "backfill-safe-jvm.jar"
# The dbt project the tools work on, as dbt finds it: DBT_PROJECT_DIR, else the working folder
# (a team's project that installed the framework); in a checkout, else this repository (the
# examples). Its profile: DBT_PROFILES_DIR, else the project's profiles.yml, else this
# repository's profiles/ (its own project), else ~/.dbt, as dbt looks.
PROJECT_DIR = Path(os.environ.get("DBT_PROJECT_DIR") or (Path.cwd() if INSTALLED else FRAMEWORK_DIR)).resolve()


def _profiles_dir() -> Path:
    if os.environ.get("DBT_PROFILES_DIR"):
        return Path(os.environ["DBT_PROFILES_DIR"])
    if (PROJECT_DIR / "profiles.yml").is_file():
        return PROJECT_DIR
    if not INSTALLED and PROJECT_DIR == FRAMEWORK_DIR:
        return FRAMEWORK_DIR / "profiles"
    return Path.home() / ".dbt"


PROFILES_DIR = _profiles_dir().resolve()


def state_dir() -> Path:
    return Path(os.environ.get("PIPELINE_STATE_DIR", PROJECT_DIR / ".warehouse")).resolve()


def target_dir() -> Path:
    """dbt's target folder (manifest, run results): DBT_TARGET_PATH, as dbt itself reads it, else
    `target/` of the project. A process that runs dbt beside another one sets its own."""
    path = Path(os.environ.get("DBT_TARGET_PATH", "target"))
    return path if path.is_absolute() else PROJECT_DIR / path


def project_var(name: str) -> object:
    """The default of dbt var `name` in the project's dbt_project.yml (what a run without
    --vars uses); KeyError when the project does not set it."""
    import yaml  # dbt's own dependency

    variables = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text()).get("vars") or {}
    if name not in variables:
        raise KeyError(f"dbt_project.yml: no var {name!r}")
    return variables[name]


def dispatches_to_framework() -> bool:
    """True when dbt finds the framework's versions of dbt's dispatched macros (get_test_sql:
    a data test reads a backfill's branch on its own connection; create_view_as): the project is
    the framework itself, or its dbt_project.yml has the `dispatch:` block of
    docs/guides/adopt-the-framework.md (namespace dbt, backfill_safe in the search order)."""
    import yaml  # dbt's own dependency

    project = yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text()) or {}
    if project.get("name") == "backfill_safe":
        return True
    return any(
        isinstance(entry, dict)
        and entry.get("macro_namespace") == "dbt"
        and "backfill_safe" in (entry.get("search_order") or [])
        for entry in project.get("dispatch") or []
    )


def profile_name() -> str:
    """The `profile:` of the project's dbt_project.yml."""
    import yaml  # dbt's own dependency

    return str(yaml.safe_load((PROJECT_DIR / "dbt_project.yml").read_text())["profile"])


def export_environment() -> None:
    """Pin the environment variables the profile reads to absolute paths.

    dbt renders profiles/profiles.yml with these; setting them absolutely makes the profile
    independent of the working directory of whoever calls dbt.
    """
    os.environ["PIPELINE_STATE_DIR"] = str(state_dir())
    os.environ.setdefault("PIPELINE_ICEBERG_JAR", str(DEFAULT_JAR))
    os.environ.setdefault("PIPELINE_JVM_JAR", str(JVM_JAR))
    os.environ.setdefault("DBT_PROFILES_DIR", str(PROFILES_DIR))
