"""The rides' daily runs in processes of their own, for the test that kills one between the
fact's commit and its aggregate's and inside the aggregate's (test_additive_kill.py). Embedded
Derby admits one JVM per metastore: these processes use their own state folder
(PIPELINE_STATE_DIR, set by the test), never the test session's.

    python delta_kill_harness.py setup     build the rides from their base events, then land and
                                           run a first day (the aggregate recomputes and marks it)
    python delta_kill_harness.py land N    land day N's trips: one new, one fare corrected, the
                                           day before's new trip voided
    python delta_kill_harness.py run       `dbt run` of the rides
    python delta_kill_harness.py verify    print `RESULT <json>`: whether the aggregate equals its
                                           select over the fact, its duplicate keys, its mark
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

AGG = "marts.agg_daily_city_trips"
COLUMNS = "daily_city_key, trip_date, city, trip_count, distance_km, fare_amount, commission_amount"


def _warehouse():
    from domains import RIDES
    from helpers import Warehouse
    from pipeline import paths
    from pipeline.dbt import Dbt
    from pipeline.spark import get_spark

    # a folder per process: each numbers its batches from 0, and a file is landed once by its path
    return Warehouse(get_spark(), Dbt(quiet=True), paths.state_dir() / "batches" / str(os.getpid()),
                     RIDES.select)


def _day(n: int) -> list[dict]:
    from helpers import trip

    at = f"2025-01-11 {n:02d}:00"
    trips = [trip(100 + n, "2025-01-10 08:00", at, fare=f"{10 * n}.00"),
             trip(2, "2025-01-10 10:00", at, fare=f"{30 + n}.00")]
    if n > 1:
        trips.append(trip(100 + n - 1, "2025-01-10 08:00", at, fare=f"{10 * (n - 1)}.00", is_deleted=True))
    return trips


def main(command: str, *args: str) -> int:
    from domains import RIDES
    from helpers import empty_warehouse

    wh = _warehouse()
    if command == "setup":
        empty_warehouse(wh.spark)
        wh.dbt.invoke("seed")
        wh.land(**RIDES.base())
        wh.dbt_run()
        wh.land(trips=_day(1))
        wh.dbt_run()
    elif command == "land":
        wh.land(trips=_day(int(args[0])))
    elif command == "run":
        wh.dbt_run()
    elif command == "verify":
        table = wh.table(f"(select {COLUMNS} from {AGG})")
        truth = wh.table(f"(select {COLUMNS} from {AGG}__current_state)")
        [mark] = wh.rows(f"select s.summary['wap.id'] as mark from {AGG}.refs as r join {AGG}.snapshots as s"
                         " on s.snapshot_id = r.snapshot_id where r.name = 'main'")
        print("RESULT " + json.dumps({"equal": table == truth, "rows": len(table),
                                      "duplicates": len(table) - len({r[0] for r in table}),
                                      "mark": mark.mark}), flush=True)
    else:
        sys.exit(f"unknown command {command!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
