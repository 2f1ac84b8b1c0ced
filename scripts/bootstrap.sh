#!/usr/bin/env bash
# Prepare everything the project needs, idempotently: checks Java 17 and Python 3.11, creates
# .venv, installs the pinned dependencies (again only when pyproject.toml changed), links
# the Iceberg Spark runtime jar into jars/ and compiles the framework's JVM classes there
# (needs javac). Sourced by main.sh and test.sh;
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

# pip, with what it prints but one warning: a pip configuration (pip config list) may name
# package locations that do not exist, and pip then warns once per package and location (a
# hundred lines on a machine whose extra-index-url is a missing folder). Those are counted in one
# line; everything else pip says is printed, and all of it when pip fails.
passed_over=0
quiet_pip() {
    local log missing count
    missing="^WARNING: Location '.*' is ignored: it is neither a file nor a directory\.$"
    log="$(mktemp)"
    if ! .venv/bin/python -m pip "$@" >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        return 1
    fi
    grep -v "$missing" "$log" || true
    count="$(grep -c "$missing" "$log" || true)"
    passed_over=$((passed_over + count))
    rm -f "$log"
}

stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$stamp" ]; then
    echo "bootstrap: installing pinned dependencies into .venv (once per pyproject.toml change)"
    quiet_pip install --quiet --upgrade pip
    quiet_pip install --quiet -e ".[dev]"
    if [ "$passed_over" -gt 0 ]; then
        echo "bootstrap: pip's configuration names package locations that do not exist ($passed_over warnings left out; pip config list)"
    fi
    rm -f .venv/.installed-*
    touch "$stamp"
fi

# jars/: the Iceberg Spark runtime (linked from the snowpark-connect-deps-iceberg package) and the
# framework's JVM classes (scripts/jvm/backfill_safe/, compiled against pyspark's jars again only
# when a source changed), where profiles/profiles.yml names them (scripts/build_package.py)
.venv/bin/python scripts/build_package.py jars
mkdir -p .warehouse
