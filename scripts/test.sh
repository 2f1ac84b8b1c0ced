#!/usr/bin/env bash
# The tests, in tiers (pytest markers; tests/python/conftest.py marks every test not `fast` as
# `integration`):
#   bash scripts/test.sh              fast + integration: what CI (.ci/run) runs
#   bash scripts/test.sh fast         the developer's loop: sqlfluff lint, dbt parse and the pure
#                                     Python tests (contract, planning, conventions, generator);
#                                     no Spark session
#   bash scripts/test.sh integration  the embedded Spark/Iceberg tests, the browser and the cluster,
#                                     then dbt's own adapter suite with the framework installed
#                                     (tests/adapter: its own process, its own Spark session)
# Out of both, each with its own command: `.venv/bin/python -m pytest -m chaos` (fault injection,
# about 18 min for 4 kill points) and `-m bench` (the benchmark end to end at a tiny scale).
# Extra arguments go to pytest.
set -euo pipefail
tier="all"
case "${1:-}" in
    fast|integration|all) tier="$1"; shift ;;
esac
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
if [ "$tier" != "integration" ]; then
    echo "== sqlfluff lint"
    .venv/bin/sqlfluff lint models macros tests/dbt
fi
if [ "$tier" = "fast" ]; then
    echo "== pytest -m fast"
    exec .venv/bin/python -m pytest -m fast --durations=10 "$@"
fi
bash scripts/install_browser.sh  # Debian's chromium, for the status page's test in a real browser
adapter_suite() {
    echo "== pytest tests/adapter (dbt's adapter suite, the framework installed as a package)"
    .venv/bin/python -m pytest tests/adapter --durations=5 -q
}
if [ "$tier" = "integration" ]; then
    echo "== pytest -m integration"
    .venv/bin/python -m pytest -m "integration and not chaos and not bench" --durations=15 "$@"
    adapter_suite
    exit 0
fi
echo "== pytest"
# One process, one Spark session (two pytest-xdist workers, a module per worker, measured no
# faster on 2 cores: each ran at half speed; docs/guides/run-the-tests.md).
.venv/bin/python -m pytest --durations=15 "$@"
adapter_suite
