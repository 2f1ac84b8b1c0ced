#!/usr/bin/env bash
# The main job on the embedded Spark: generate a sample, land it, dbt build, land a day of
# late corrections / header changes / out-of-order versions / duplicates / deletions, run the
# incremental again and print what it did. Extra arguments go to `python -m sample main`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
exec .venv/bin/python -m sample main "$@"
