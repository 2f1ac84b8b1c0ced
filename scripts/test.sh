#!/usr/bin/env bash
# The tests, in tiers (pytest markers; tests/python/conftest.py marks every test not `fast` as
# `integration`):
#   bash scripts/test.sh              fast + integration: what CI (.ci/run) runs
#   bash scripts/test.sh fast         the developer's loop: sqlfluff lint, ruff and mypy over the
#                                     pipeline package, dbt parse and the pure Python tests
#                                     (contract, planning, conventions, generator); no Spark session
#   bash scripts/test.sh integration  the embedded Spark/Iceberg tests and the browser,
#                                     then dbt's own adapter suite with the framework installed
#                                     (tests/adapter: its own process, its own Spark session)
#   bash scripts/test.sh extended     the tests with minutes of JVMs, a virtual environment or
#                                     generated data of their own: the cluster path through a
#                                     Thrift Server (four JVMs), a team's project installing the
#                                     package, generated days against a full refresh
# Out of them all, each with its own command: `.venv/bin/python -m pytest -m chaos` (the kill
# tests: fault injection, about 18 min for 4 kill points, and a backfill killed twice and
# resumed) and `-m bench` (the benchmark end to end at a tiny scale).
# The tests marked `beside` (the main job's sample; and modules with
# a build of their own, to even the two processes' time) run in a second pytest process beside
# the first, followed there by dbt's adapter suite: its output is printed when both are done,
# and either failing fails the run.
# Extra arguments go to pytest, and then everything runs in one process, one part after the
# other (a selection may leave one of the two processes nothing to run).
set -euo pipefail
tier="all"
case "${1:-}" in
    fast|integration|extended|all) tier="$1"; shift ;;
esac
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
if [ "$tier" = "fast" ] || [ "$tier" = "all" ]; then
    echo "== sqlfluff lint"
    .venv/bin/sqlfluff lint models macros tests/dbt
    # the pipeline package: ruff's rules and format, then mypy (their settings: pyproject.toml)
    echo "== ruff check, ruff format --check, mypy"
    .venv/bin/ruff check --quiet
    .venv/bin/ruff format --check --quiet
    .venv/bin/mypy
fi
if [ "$tier" = "fast" ]; then
    echo "== pytest -m fast"
    exec .venv/bin/python -m pytest -m fast --durations=10 "$@"
fi
if [ "$tier" = "extended" ]; then
    echo "== pytest -m extended"
    exec .venv/bin/python -m pytest -m extended --durations=10 "$@"
fi
bash scripts/install_browser.sh  # Debian's chromium, for the status page's test in a real browser
adapter_suite() {
    echo "== pytest tests/adapter (dbt's adapter suite, the framework installed as a package)"
    .venv/bin/python -m pytest tests/adapter --durations=5 -q
}
if [ "$tier" = "integration" ]; then
    selection="integration and not chaos and not bench and not extended"
else
    selection="not chaos and not bench and not extended"
fi
if [ "$#" -gt 0 ]; then
    echo "== pytest -m \"$selection\""
    .venv/bin/python -m pytest -m "$selection" --durations=15 "$@"
    adapter_suite
    exit 0
fi
# Two processes: the main session's JVM leaves about a third of the 2 cores idle (a fresh-clone
# run at 62% busy), which the other JVMs' work fills (docs/guides/run-the-tests.md).
beside_log="$(mktemp)"
(
    set +e
    .venv/bin/python -m pytest -m "beside and $selection" --durations=15
    suite=$?
    adapter_suite
    adapter=$?
    exit $(( suite != 0 ? suite : adapter ))
) > "$beside_log" 2>&1 &
beside=$!
echo "== pytest -m \"not beside and $selection\" (pytest -m \"beside and ...\" and the adapter suite beside it)"
main=0
.venv/bin/python -m pytest -m "not beside and $selection" --durations=15 || main=$?
other=0
wait "$beside" || other=$?
echo "== the second process: pytest -m \"beside and $selection\", then dbt's adapter suite"
cat "$beside_log"
rm -f "$beside_log"
if [ "$main" -ne 0 ] || [ "$other" -ne 0 ]; then
    echo "== failed: the main process exited $main, the second $other" >&2
    exit 1
fi
