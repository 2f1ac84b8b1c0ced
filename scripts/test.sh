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
exec .venv/bin/python -m pytest --durations=15 "$@"
