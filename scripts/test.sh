#!/usr/bin/env bash
# The tests: sqlfluff lint of models, macros and data tests, then pytest on the embedded Spark
# (which runs the dbt builds and their data tests on real Iceberg tables). Extra arguments go
# to pytest (one run, as given).
# With none, the SIGKILL backfill test (its own processes, state and dbt target folder; mostly
# waiting on JVM starts) runs beside the rest of the suite, which shares one Spark session:
# on 2 cores that saves about 4 of the suite's minutes. Both must pass.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
echo "== sqlfluff lint"
.venv/bin/sqlfluff lint models macros tests/dbt
echo "== pytest"
if [ "$#" -gt 0 ]; then
    exec .venv/bin/python -m pytest --durations=15 "$@"
fi
KILL_TEST=tests/python/test_backfill_kill.py
side="$(mktemp -d)"
.venv/bin/python -m pytest -p no:cacheprovider --basetemp "$side/tmp" --durations=3 "$KILL_TEST" \
    >"$side/out.log" 2>&1 &
side_pid=$!
trap 'kill "$side_pid" 2>/dev/null || true' EXIT
main_status=0
.venv/bin/python -m pytest --durations=15 --ignore "$KILL_TEST" || main_status=$?
side_status=0
wait "$side_pid" || side_status=$?
trap - EXIT
echo "== pytest $KILL_TEST (ran beside the suite above)"
cat "$side/out.log"
rm -rf "$side"
if [ "$main_status" -ne 0 ] || [ "$side_status" -ne 0 ]; then
    echo "tests failed: suite exit $main_status, $KILL_TEST exit $side_status" >&2
    exit 1
fi
