"""The one Spark session of a Python process, built from the dbt profile.

dbt-spark's `session` method calls `SparkSession.builder...getOrCreate()`, so when this module
has created the session first, every in-process dbt invocation reuses it: one JVM, one
metastore connection, for landing, dbt and reporting alike.
"""

from __future__ import annotations

import fcntl
import os
from functools import lru_cache
from pathlib import Path
from typing import IO

import jinja2
import yaml
from pyspark.sql import SparkSession

from pipeline import paths

_held: list[IO[str]] = []  # the open lock file of this process's warehouse, kept until it exits


class WarehouseBusy(RuntimeError):
    """Another process of this host has the embedded warehouse open."""


def lock_warehouse(state: Path) -> None:
    """Hold the embedded warehouse for this process, or refuse at once, before any JVM starts.

    Embedded Derby admits one JVM per metastore: a second process (a daily run during a
    backfill, two landings at once) would otherwise die on Derby's own lock with an obscure
    error. An advisory lock on `<state>/warehouse.lock`, released by the OS when the process
    ends, however it ends (a SIGKILL leaves no stale lock)."""
    if _held:
        return
    state.mkdir(parents=True, exist_ok=True)
    handle = (state / "warehouse.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        held_by = _holder_named(handle)
        handle.close()
        raise WarehouseBusy(
            f"the embedded warehouse {state} is in use by {held_by}; embedded Spark admits one process "
            "at a time (its Derby metastore): wait for that one to finish, or run both on a Spark cluster"
        ) from None
    handle.truncate(0)
    handle.write(f"process {os.getpid()}")
    handle.flush()
    _held.append(handle)


def holder(state: Path | None = None) -> str | None:
    """Who holds the embedded warehouse now (`process <pid>`), or None: nobody does."""
    path = (state or paths.state_dir()) / "warehouse.lock"
    if not path.exists():
        return None
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _holder_named(handle)
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def _holder_named(handle) -> str:
    """What the holder of the lock file wrote in it (`process <pid>`)."""
    handle.seek(0)
    return handle.read().strip() or "another process"


def render_profile(target: str | None = None) -> dict:
    """One output of the project's profile (its dbt_project.yml `profile:` in profiles.yml of
    the profiles folder) rendered as dbt renders it (env_var and the as_number / as_bool /
    as_text filters): `target`, else DBT_TARGET, else the profile's default."""
    path = paths.PROFILES_DIR / "profiles.yml"
    text = path.read_text()

    def env_var(name: str, default: str | None = None) -> str:
        if name in os.environ:
            return os.environ[name]
        if default is None:
            raise KeyError(f"{path}: environment variable {name} is not set")
        return default

    environment = jinja2.Environment()
    environment.filters.update(as_number=lambda v: v, as_bool=lambda v: v, as_text=lambda v: v)
    rendered = yaml.safe_load(environment.from_string(text).render(env_var=env_var))
    name = paths.profile_name()
    if name not in (rendered or {}):
        raise KeyError(f"{path}: no profile {name!r} (the `profile:` of {paths.PROJECT_DIR / 'dbt_project.yml'})")
    profile = rendered[name]
    target = target or profile["target"]
    if target not in profile["outputs"]:
        raise KeyError(f"{path}: no target {target!r} (DBT_TARGET); targets: {sorted(profile['outputs'])}")
    return profile["outputs"][target]


def spark_conf() -> dict[str, str]:
    """The `server_side_parameters` of the embedded target, rendered."""
    paths.export_environment()
    output = render_profile("embedded")
    conf = {str(k): str(v) for k, v in output["server_side_parameters"].items()}
    # a jar named by a relative path is the project's, as dbt finds it when run from the
    # project's folder (a team's profile names dbt_packages/backfill_safe/jars/...); spark.jars
    # is a comma-separated list, a class path a path-separated one
    for key, separator in (("spark.jars", ","), ("spark.driver.extraClassPath", os.pathsep)):
        if key in conf:
            conf[key] = separator.join(
                str(paths.PROJECT_DIR / entry) if entry and not Path(entry).is_absolute() else entry
                for entry in conf[key].split(separator)
            )
    # dbt-spark forces this on every connection; do the same so both agree
    conf["spark.sql.ansi.enabled"] = "false"
    return conf


def class_path(conf: dict[str, str]) -> list[Path]:
    """The jars of the driver's class path (spark.driver.extraClassPath): the framework's JVM
    classes, then the Iceberg runtime its session catalog extends."""
    return [Path(entry) for entry in conf.get("spark.driver.extraClassPath", "").split(os.pathsep) if entry]


@lru_cache(maxsize=1)
def get_spark() -> SparkSession:
    conf = spark_conf()
    jar = Path(conf["spark.jars"])
    if not jar.is_file():
        raise FileNotFoundError(
            f"Iceberg runtime jar not found at {jar} (spark.jars of the profile's embedded target): "
            f"the framework installed from a wheel has it in {paths.JARS_DIR} (a project reaches it "
            "through dbt_packages/backfill_safe/jars/ after `dbt deps`); a checkout links it with scripts/bootstrap.sh"
        )
    uses_ours = conf.get("spark.hadoop.fs.file.impl", "").startswith("backfill_safe.") or conf.get(
        "spark.sql.catalog.spark_catalog", ""
    ).startswith("backfill_safe.")
    classes = class_path(conf)
    missing = [entry for entry in classes if not entry.is_file()]
    if uses_ours and (missing or not classes):
        raise FileNotFoundError(
            f"the framework's JVM classes not found at {missing[0] if missing else 'spark.driver.extraClassPath'}: "
            f"the framework installed from a wheel has them in {paths.JARS_DIR}; a checkout compiles them "
            "with scripts/bootstrap.sh (scripts/jvm/backfill_safe/*.java)"
        )
    lock_warehouse(paths.state_dir())
    builder = SparkSession.builder.appName("backfill_safe").master("local[2]").enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
