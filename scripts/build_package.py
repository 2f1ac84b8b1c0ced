"""The framework's installable pieces, from this repository: the JVM jars and the dbt package.

    python scripts/build_package.py jars     compile the JVM classes into jars/ (scripts/bootstrap.sh)

- `jars/backfill-safe-jvm.jar`: the framework's JVM classes (scripts/jvm/backfill_safe/*.java),
  compiled against pyspark's jars and the Iceberg runtime, again only when a source changed;
- `jars/iceberg-spark-runtime.jar`: the Iceberg Spark runtime, from the
  snowpark-connect-deps-iceberg package.

Both sit in `jars/` of the dbt package's folder: this repository's root in a checkout (links, for
profiles/profiles.yml), `backfill_safe/` in site-packages once installed from a wheel (copies,
put there by setup.py with the dbt package `dbt_package` assembles), which a team's profile
names through its `dbt_packages/backfill_safe` (docs/guides/adopt-the-framework.md).
Standard library only: setup.py imports it while building a wheel.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JVM_SOURCES = ROOT / "scripts" / "jvm" / "backfill_safe"
JVM_JAR = "backfill-safe-jvm.jar"
ICEBERG_JAR = "iceberg-spark-runtime.jar"
# the classes of scripts/jvm/backfill_safe/, each checked after javac (a failed compile leaves no jar)
# - NioLocalFileSystem: the embedded target's local file system (permissions through java.nio,
#   not a forked chmod per file written);
# - ScanLog: what each SQL statement scanned, read by the on-run-end hook record_scans;
# - ScanPartitions: the partitions each statement's scans planned (a listener; ScanLog reports them);
# - ScanPlan: what a statement will scan, planned and not run (`pipeline explain`);
# - SessionCatalog: Iceberg's session catalog whose DROP TABLE of a plain table deletes its
#   folder (compiled against the Iceberg runtime too); Json: their output.
CLASSES = ("Json", "NioLocalFileSystem", "ScanLog", "ScanPartitions", "ScanPlan", "SessionCatalog")
# What of this repository is the dbt package a team installs: the framework's macros, its audit
# models and its test for every project. The examples (their models, macros, seeds, yml, vars)
# stay here (issue 50: nothing of them reaches a team's project).
PACKAGE_FOLDERS = ("macros", "models/audit", "tests/dbt")
EXAMPLE_FOLDERS = ("macros/examples",)


def _is_example(path: Path) -> bool:
    """A file or folder of the examples (EXAMPLE_FOLDERS): left out of the package."""
    return any(path == ROOT / e or ROOT / e in path.parents for e in EXAMPLE_FOLDERS)


class BuildError(RuntimeError):
    pass


def iceberg_runtime() -> Path:
    """The Iceberg Spark runtime jar (Spark 3.5, Scala 2.12) of snowpark-connect-deps-iceberg."""
    import snowpark_connect_deps_iceberg as deps

    found = sorted(Path(deps.get_jars_dir()).glob("iceberg-spark-runtime-3.5_2.12-*.jar"))
    if not found:
        raise BuildError(f"no iceberg-spark-runtime-3.5_2.12 jar in {deps.get_jars_dir()}")
    return found[-1]


def _sources_hash() -> str:
    digest = hashlib.sha256()
    for source in sorted(JVM_SOURCES.glob("*.java")):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def compile_jvm(jars: Path) -> Path:
    """`jars/backfill-safe-jvm-<hash of the sources>.jar`, compiled only when no jar of these
    sources is there yet; built aside and moved into place (an interrupted build leaves no jar
    that looks complete)."""
    built = jars / f"backfill-safe-jvm-{_sources_hash()}.jar"
    if built.is_file():
        return built
    import pyspark

    if shutil.which("javac") is None or shutil.which("jar") is None:
        raise BuildError("javac and jar not found: building the framework's JVM classes needs a Java JDK "
                         "(Spark 3.5 runs on Java 17): e.g. apt-get install openjdk-17-jdk-headless")
    sources = sorted(str(p) for p in JVM_SOURCES.glob("*.java"))
    print("compiling", *(Path(s).name for s in sources), file=sys.stderr)
    class_path = f"{Path(pyspark.__file__).parent / 'jars'}/*{os.pathsep}{iceberg_runtime()}"
    with tempfile.TemporaryDirectory() as scratch:
        classes = Path(scratch) / "classes"
        done = subprocess.run(["javac", "--release", "8", "-nowarn", "-cp", class_path, "-d", str(classes), *sources],
                              capture_output=True, text=True)
        missing = [c for c in CLASSES if not (classes / "backfill_safe" / f"{c}.class").is_file()]
        if done.returncode != 0 or missing:
            raise BuildError(f"javac failed on {JVM_SOURCES}:\n{done.stdout}{done.stderr}")
        subprocess.run(["jar", "cf", str(Path(scratch) / "jvm.jar"), "-C", str(classes), "backfill_safe"], check=True)
        jars.mkdir(parents=True, exist_ok=True)
        for stale in jars.glob("backfill-safe-jvm-*.jar"):
            stale.unlink()
        shutil.move(str(Path(scratch) / "jvm.jar"), built)
    return built


def link_jars(jars: Path) -> None:
    """A checkout's `jars/`: the two jars as links (the JVM jar to its build of these sources)."""
    built = compile_jvm(jars)
    for name, target in ((JVM_JAR, built.name), (ICEBERG_JAR, str(iceberg_runtime()))):
        link = jars / name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)


def package_project() -> str:
    """The package's dbt_project.yml: this repository's, less what belongs to the examples
    (their folders' model and seed configs, the examples' test switch, their vars) and less what
    only a root project sets (profile, flags). Vars kept: those the package's macros read, but
    `lookback_days`, whose domains are each project's own."""
    import yaml  # PyYAML: a build requirement

    project = yaml.safe_load((ROOT / "dbt_project.yml").read_text())
    macros = "\n".join(p.read_text() for folder in PACKAGE_FOLDERS for p in (ROOT / folder).rglob("*.sql")
                       if not _is_example(p))
    read = set(re.findall(r"var\(\s*'([a-z_]+)'", macros))
    variables = {k: v for k, v in (project.get("vars") or {}).items() if k in read and k != "lookback_days"}
    package = {
        "name": project["name"], "version": project["version"], "config-version": project["config-version"],
        "model-paths": ["models"], "macro-paths": ["macros"], "test-paths": ["tests/dbt"],
        "on-run-start": project["on-run-start"], "on-run-end": project["on-run-end"],
        "vars": variables,
        "models": {project["name"]: {"audit": project["models"][project["name"]]["audit"]}},
    }
    header = ("# The framework's dbt package, as installed from its wheel (scripts/build_package.py: the\n"
              "# repository's dbt_project.yml without its examples).\n")
    return header + yaml.safe_dump(package, sort_keys=False)


def dbt_package(dest: Path) -> None:
    """The dbt package a wheel installs into site-packages/backfill_safe: dbt_project.yml, the
    framework's macros, audit models and test, and jars/ (copies: a wheel holds no links)."""
    if dest.exists():
        shutil.rmtree(dest)  # no file of an earlier build survives into this one
    for folder in PACKAGE_FOLDERS:
        shutil.copytree(ROOT / folder, dest / folder,
                        ignore=lambda d, names: [n for n in names if n == "__pycache__" or _is_example(Path(d) / n)])
    (dest / "dbt_project.yml").write_text(package_project())
    checkout_jars = ROOT / "jars"
    built = compile_jvm(checkout_jars)
    (dest / "jars").mkdir()
    shutil.copyfile(built, dest / "jars" / JVM_JAR)
    shutil.copyfile(iceberg_runtime(), dest / "jars" / ICEBERG_JAR)


def main(argv: list[str]) -> int:
    if argv != ["jars"]:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        link_jars(ROOT / "jars")
    except BuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
