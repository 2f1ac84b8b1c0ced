#!/usr/bin/env bash
# The tests: sqlfluff lint of models, macros and data tests, then pytest on the embedded Spark
# (which runs the dbt builds and their data tests on real Iceberg tables). Extra arguments go
# to pytest.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
bash scripts/install_browser.sh  # Debian's chromium, for the status page's test in a real browser
echo "== sqlfluff lint"
.venv/bin/sqlfluff lint models macros tests/dbt
echo "== pytest"
# One process, one Spark session (two pytest-xdist workers were measured slower on 2 cores: two
# JVMs and the kill tests' processes contend). The fault-injection run is marked `chaos` and left
# out here (about 18 min for 4 kill points): `.venv/bin/python -m pytest -m chaos`, or the script.
exec .venv/bin/python -m pytest --durations=15 "$@"
