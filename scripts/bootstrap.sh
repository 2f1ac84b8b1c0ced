#!/usr/bin/env bash
# Prepare everything the project needs, idempotently: checks Java 17 and Python 3.11, creates
# .venv, installs the pinned dependencies (again only when pyproject.toml changed), links
# the Iceberg Spark runtime jar where profiles/profiles.yml expects it, and compiles the
# framework's JVM classes (needs javac). Sourced by main.sh and test.sh;
# safe to run on its own.
set -euo pipefail
PROJECT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$PROJECT_DIR"

# java runs Spark; javac compiles the framework's JVM classes (below)
if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; then
    echo "error: a Java JDK (java and javac) is not installed. Spark 3.5 needs Java 17 (or 11/8):" >&2
    echo "  Debian/Ubuntu: sudo apt-get install -y openjdk-17-jdk-headless" >&2
    echo "  macOS:         brew install openjdk@17" >&2
    exit 1
fi
java_major="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
case "$java_major" in
    8|11|17) ;;
    *) echo "error: Java $java_major found; Spark 3.5 runs on Java 17 (or 11/8). Install openjdk-17." >&2; exit 1 ;;
esac

PYTHON="${PYTHON:-python3.11}"
if ! command -v "$PYTHON" >/dev/null 2>&1; then
    echo "error: $PYTHON not found; the project needs Python 3.11 (set PYTHON=/path/to/python3.11)." >&2
    exit 1
fi

if [ ! -x .venv/bin/python ]; then
    echo "bootstrap: creating .venv with $PYTHON"
    "$PYTHON" -m venv .venv
fi

stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "bootstrap: installing pinned dependencies into .venv (once per pyproject.toml change)"
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[dev]"
    rm -f .venv/.installed-*
    touch "$stamp"
fi

jar_dir="$(.venv/bin/python -c 'import snowpark_connect_deps_iceberg as m; print(m.get_jars_dir())')"
jar="$(ls "$jar_dir"/iceberg-spark-runtime-3.5_2.12-*.jar | head -n1)"
mkdir -p .venv/iceberg
ln -sf "$jar" .venv/iceberg/iceberg-spark-runtime.jar

# The framework's JVM classes (scripts/jvm/backfill_safe/), compiled against pyspark's jars
# into one jar on the Spark driver's class path, again only when a source changed:
# - NioLocalFileSystem: the embedded target's local file system (permissions through java.nio,
#   not a forked chmod per file written);
# - ScanLog: what each SQL statement scanned, read by the on-run-end hook record_scans;
# - ScanPartitions: the partitions each statement's scans planned (a listener; ScanLog reports them);
# - ScanPlan: what a statement will scan, planned and not run (`pipeline explain`);
# - SessionCatalog: Iceberg's session catalog whose DROP TABLE of a plain table deletes its
#   folder (compiled against the Iceberg runtime too).
jvm_sources="$(ls scripts/jvm/backfill_safe/*.java)"
jvm_jar=".venv/jars/backfill-safe-jvm-$(cat $jvm_sources | sha256sum | cut -c1-16).jar"
if [ ! -f "$jvm_jar" ]; then
    echo "bootstrap: compiling" $jvm_sources
    pyspark_jars="$(.venv/bin/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
    classes="$(mktemp -d)"
    trap 'rm -rf "$classes"' EXIT
    # shellcheck disable=SC2086
    javac --release 8 -nowarn -cp "$pyspark_jars/*:$jar" -d "$classes" $jvm_sources 2>&1 | grep -v "^warning: \[options\]" || true
    for class in Json NioLocalFileSystem ScanLog ScanPartitions ScanPlan SessionCatalog; do
        [ -f "$classes/backfill_safe/$class.class" ] || { echo "error: javac failed on scripts/jvm/backfill_safe/$class.java" >&2; exit 1; }
    done
    mkdir -p .venv/jars
    # built aside and moved into place: an interrupted build leaves no jar that looks complete
    jar cf "$classes/jvm.jar" -C "$classes" backfill_safe
    rm -f .venv/jars/backfill-safe-jvm-*.jar .venv/jars/backfill-safe-localfs*.jar
    mv "$classes/jvm.jar" "$jvm_jar"
    rm -rf "$classes"
    trap - EXIT
fi
ln -sf "$(basename "$jvm_jar")" .venv/jars/backfill-safe-jvm.jar
mkdir -p .warehouse
