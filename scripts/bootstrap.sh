#!/usr/bin/env bash
# Prepare everything the project needs, idempotently: checks Java 17 and Python 3.11, creates
# .venv, installs the pinned dependencies (again only when pyproject.toml changed), links
# the Iceberg Spark runtime jar where profiles/profiles.yml expects it, and compiles the
# embedded target's local file system class (needs javac). Sourced by main.sh and test.sh;
# safe to run on its own.
set -euo pipefail
PROJECT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$PROJECT_DIR"

# java runs Spark; javac compiles the embedded target's local file system class (below)
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

# The embedded target's local file system (scripts/jvm/backfill_safe/NioLocalFileSystem.java:
# permissions through java.nio, not a forked chmod per file written), compiled against
# pyspark's Hadoop client, again only when the source changed.
localfs_src="scripts/jvm/backfill_safe/NioLocalFileSystem.java"
localfs_jar=".venv/jars/backfill-safe-localfs-$(sha256sum "$localfs_src" | cut -c1-16).jar"
if [ ! -f "$localfs_jar" ]; then
    echo "bootstrap: compiling $localfs_src"
    pyspark_jars="$(.venv/bin/python -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"
    hadoop_api="$(ls "$pyspark_jars"/hadoop-client-api-*.jar | head -n1)"
    classes="$(mktemp -d)"
    trap 'rm -rf "$classes"' EXIT
    javac --release 8 -nowarn -cp "$hadoop_api" -d "$classes" "$localfs_src" 2>&1 | grep -v "^warning: \[options\]" || true
    [ -f "$classes/backfill_safe/NioLocalFileSystem.class" ] || { echo "error: javac failed on $localfs_src" >&2; exit 1; }
    mkdir -p .venv/jars
    # built aside and moved into place: an interrupted build leaves no jar that looks complete
    jar cf "$classes/localfs.jar" -C "$classes" backfill_safe
    rm -f .venv/jars/backfill-safe-localfs-*.jar
    mv "$classes/localfs.jar" "$localfs_jar"
    rm -rf "$classes"
    trap - EXIT
fi
ln -sf "$(basename "$localfs_jar")" .venv/jars/backfill-safe-localfs.jar
mkdir -p .warehouse
