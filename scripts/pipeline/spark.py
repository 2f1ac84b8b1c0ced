"""The one Spark session of a Python process, built from the dbt profile.

dbt-spark's `session` method calls `SparkSession.builder...getOrCreate()`, so when this module
has created the session first, every in-process dbt invocation reuses it: one JVM, one
metastore connection, for landing, dbt and reporting alike.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

import jinja2
import yaml
from pyspark.sql import SparkSession

from pipeline import paths


def _render_profile(target: str | None = None) -> dict:
    text = (paths.PROFILES_DIR / "profiles.yml").read_text()

    def env_var(name: str, default: str | None = None) -> str:
        if name in os.environ:
            return os.environ[name]
        if default is None:
            raise KeyError(f"profiles/profiles.yml: environment variable {name} is not set")
        return default

    rendered = jinja2.Template(text).render(env_var=env_var)
    profile = yaml.safe_load(rendered)["backfill_safe"]
    target = target or profile["target"]
    return profile["outputs"][target]


def spark_conf() -> dict[str, str]:
    """The `server_side_parameters` of the embedded target, rendered."""
    paths.export_environment()
    output = _render_profile("embedded")
    conf = {str(k): str(v) for k, v in output["server_side_parameters"].items()}
    # dbt-spark forces this on every connection; do the same so both agree
    conf["spark.sql.ansi.enabled"] = "false"
    return conf


@lru_cache(maxsize=1)
def get_spark() -> SparkSession:
    conf = spark_conf()
    jar = Path(conf["spark.jars"])
    if not jar.is_file():
        raise FileNotFoundError(
            f"Iceberg runtime jar not found at {jar}: run scripts/bootstrap.sh "
            "(it links the jar from the snowpark-connect-deps-iceberg package)"
        )
    paths.state_dir().mkdir(parents=True, exist_ok=True)
    builder = SparkSession.builder.appName("backfill_safe").master("local[2]").enableHiveSupport()
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
