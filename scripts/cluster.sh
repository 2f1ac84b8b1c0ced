#!/usr/bin/env bash
# A local Spark standalone cluster (a master, two single-core workers) and a Spark Thrift
# Server on it, all on 127.0.0.1, for the `cluster` dbt target (see docs/guides/cluster-mode.md):
#   bash scripts/cluster.sh start [--thrift-port N] [--timeout S]   prints the exports dbt needs
#   bash scripts/cluster.sh status
#   bash scripts/cluster.sh stop
# State, logs, metastore and warehouse are in <state dir>/cluster/ (PIPELINE_STATE_DIR, default
# .warehouse). Needs the project's .venv: `bash scripts/bootstrap.sh` must have run (this script
# installs nothing). Exit codes: 0 done, 1 failed (status: not running), 2 refused.
set -euo pipefail
PROJECT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ ! -x "$PROJECT_DIR/.venv/bin/python" ]; then
    echo "error: $PROJECT_DIR/.venv not found: run bash scripts/bootstrap.sh first" >&2
    exit 1
fi
# this checkout's own pipeline package, whatever the virtualenv's editable install points at
export PYTHONPATH="$PROJECT_DIR/scripts${PYTHONPATH:+:$PYTHONPATH}"
exec "$PROJECT_DIR/.venv/bin/python" -m pipeline.cli cluster "$@"
