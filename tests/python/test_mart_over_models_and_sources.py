"""A team's mart as it is (issue 80): a model of the kind whose select joins a model of the kind
(the rides fact), a plain model (the trips' staging view) and a landed source (the drivers'
versions, read straight from the source), written as plain SQL in its own file, with only its
config and a yml declaration added: no current state of its own (the framework keeps the view
of its select), its scope tying the fact's recorded changes and the landed sources' new versions
to its key (models and sources mixed in one scope).

Proven on real tables, in a team's project (generated: this repository's project plus the
mart): after its first build and after a daily run that brings a driver's rename alone (a
change only the source carries: the fact's rows stay as they are), a late correction of a
fare, a voided trip, a new trip and an out-of-order stale version, the mart equals its
select's unscoped result and the framework's tests pass. With the drivers left out of its
scope, the build is refused before anything runs, naming them; declared static instead (their
changes put no key in scope), a rename is missed and the audit test names the trip, and
`pipeline restate` (a backfill of the listed date, on a branch, published) repairs it once the
scope ties them."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from harness.generated_project import write_project
from helpers import Warehouse, driver, trip
from pipeline.backfill.runner import Backfill
from pipeline.dbt import Dbt, DbtError

pytestmark = pytest.mark.beside  # a build of its own (a generated project)

MART = "trip_driver_names"

MART_SQL = """{{ config(materialized='backfill_safe', unique_key='trip_id', partition_by=['trip_date']) }}

-- One row per trip with its driver's current name.
with

trips as (
    select trip_id, trip_date, city, fare_amount from {{ ref('fct_trip') }}
),

pickups as (
    select trip_id, driver_id, picked_up_at from {{ ref('stg_rides__trips') }}
),

drivers as (
    select driver_id, driver_name
    from (
        select
            driver_id,
            driver_name,
            row_number() over (
                partition by driver_id order by updated_at desc, _loaded_at desc
            ) as version_rank
        from {{ source('rides', 'drivers') }}
    ) as ranked
    where version_rank = 1
)

select
    trips.trip_id,
    trips.trip_date,
    trips.city,
    pickups.picked_up_at,
    pickups.driver_id,
    drivers.driver_name,
    trips.fare_amount
from trips
left join pickups on trips.trip_id = pickups.trip_id
left join drivers on pickups.driver_id = drivers.driver_id
"""

COLUMNS = {"trip_id": "bigint", "trip_date": "date", "city": "string", "picked_up_at": "timestamp",
           "driver_id": "bigint", "driver_name": "string", "fare_amount": "decimal(12,2)"}

SCOPE_CHANGES = [{"model": "fct_trip"}, "rides.trips",
                 {"source": "rides.drivers", "through": "rides.trips", "on": "driver_id"}]


def declare(dest: Path, changes: list, static: list | None = None) -> None:
    """The mart's yml entry, as a team writes it."""
    entry = {
        "name": MART,
        "description": "One row per trip with its driver's current name.",
        "config": {"contract": {"enforced": True}, "on_schema_change": "fail",
                   "meta": {"backfill_safe": {"event_date": "trip_date", "lookback": 2,
                                              "measures": ["fare_amount"],
                                              "scope": {"key": "trip_id", "changes": changes,
                                                        **({"static": static} if static else {})}}}},
        "data_tests": ["reconcile_daily_totals", "no_unloaded_changes"],
        "columns": [{"name": name, "data_type": data_type} for name, data_type in COLUMNS.items()],
    }
    (dest / "models" / "marts" / "team").mkdir(exist_ok=True)
    (dest / "models" / "marts" / "team" / "_team__models.yml").write_text(
        yaml.safe_dump({"version": 2, "models": [entry]}, sort_keys=False))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("team_mart") / "project"
    write_project(dest, 0)
    (dest / "models" / "marts" / "team").mkdir()
    (dest / "models" / "marts" / "team" / f"{MART}.sql").write_text(MART_SQL)
    declare(dest, SCOPE_CHANGES)
    return dest


def named(rides: dict, name: str) -> dict:
    return {**rides, "driver_name": name}


def mart(wh: Warehouse) -> list[tuple]:
    return wh.table(f"marts.{MART}")


def unscoped(wh: Warehouse) -> list[tuple]:
    """The mart's select over every input, as the framework keeps it (its current state view)."""
    columns = ", ".join(COLUMNS)
    return wh.table(f"(select {columns} from marts.{MART}__current_state where not is_deleted)")


def test_a_mart_joining_a_model_a_plain_model_and_a_source_gets_the_kinds_guarantees(
        spark, dbt, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    wh = Warehouse.empty(spark, dbt, tmp_path)
    team = Dbt(quiet=True, project_dir=project)
    # its upstream and their tests (those of a model outside it, a dimension's, left out)
    build = ("build", "--select", f"+{MART}", "--indirect-selection", "cautious", "--exclude", "test_type:unit")

    wh.land(drivers=[named(driver(7, "2025-01-01 00:00", rate="0.2000"), "Ana"),
                     named(driver(8, "2025-01-01 00:00", rate="0.2500"), "Ben")],
            trips=[trip(1, "2025-01-02 10:00"), trip(2, "2025-01-02 11:00", driver_id=8, fare="30.00"),
                   trip(3, "2025-01-03 09:00")])
    team.invoke(*build)  # first build, and the framework's tests of it
    day_1 = [(1, "2025-01-02", 7, "Ana", "20.00"), (2, "2025-01-02", 8, "Ben", "30.00"),
             (3, "2025-01-03", 7, "Ana", "20.00")]
    shown = f"select trip_id, cast(trip_date as string), driver_id, driver_name, cast(fare_amount as string) from"
    assert wh.table(f"({shown} marts.{MART})") == day_1
    assert mart(wh) == unscoped(wh)

    # a rename only the source carries (effective after every trip: the fact keeps its rows), a
    # late correction, a voided trip, a new trip, and a stale version landed after the correction
    wh.land(drivers=[named(driver(8, "2025-01-03 12:00", rate="0.2500"), "Benedict")],
            trips=[trip(1, "2025-01-02 10:00", "2025-01-03 13:00", fare="25.00"),
                   trip(3, "2025-01-03 09:00", "2025-01-03 14:00", is_deleted=True),
                   trip(4, "2025-01-03 15:00", driver_id=8),
                   trip(1, "2025-01-02 10:00", "2025-01-02 12:00", fare="99.00")])
    fact_before = wh.table("marts.fct_trip")
    team.invoke(*build)
    assert [r for r in wh.table("marts.fct_trip") if r[0] == 2] == [r for r in fact_before if r[0] == 2]
    assert wh.table(f"({shown} marts.{MART})") == [
        (1, "2025-01-02", 7, "Ana", "25.00"), (2, "2025-01-02", 8, "Benedict", "30.00"),
        (4, "2025-01-03", 8, "Benedict", "20.00")]
    assert mart(wh) == unscoped(wh)
    # the mart's watermark is its landed sources' (the fact's are the fact's)
    assert str(wh.watermark(MART)) == "2025-01-03 15:00:00"

    # an input its scope leaves out is refused before anything runs, naming it and the fix
    declare(project, SCOPE_CHANGES[:2])
    with pytest.raises(DbtError, match=re.escape(
            f"model {MART} (models/marts/team/{MART}.sql), config.meta.backfill_safe.scope: the select reads "
            "landed source 'rides.drivers', which no entry ties to the key 'trip_id': a change to it would be "
            "missed")):
        team.invoke(*build, check=False)
    # declared static (its changes put no key in scope): a rename is missed, and the audit names the trip
    declare(project, SCOPE_CHANGES[:2], static=["rides.drivers"])
    wh.land(drivers=[named(driver(7, "2025-01-04 10:00", rate="0.2000"), "Anna")])
    with pytest.raises(DbtError) as missed:
        team.invoke(*build)
    assert [f for f in missed.value.failures if "no_unloaded_changes" in f and MART in f], missed.value.failures
    assert wh.table(f"(select trip_id, driver_name from marts.{MART} where driver_id = 7)") == [(1, "Ana")]
    assert wh.table(f"(select trip_id, driver_name from marts.{MART}__current_state where driver_id = 7)") == [
        (1, "Anna")]

    # the scope put right, the missed key is repaired by `pipeline restate`: the audit lists it
    # with its date, and a backfill of that date recomputes it on a branch, published
    declare(project, SCOPE_CHANGES)
    # the tools read the manifest of the project they work on (a team's `pipeline`, run in its
    # folder): here the generated project's, in its own target folder
    monkeypatch.setenv("DBT_TARGET_PATH", str(project / "target"))
    backfill = Backfill(team, spark, Console(file=io.StringIO()))
    plan = backfill.restate_plan(MART, 7)
    assert [(str(w.start), str(w.end)) for w in plan.windows] == [("2025-01-02", "2025-01-03")]
    assert MART in [m.name for m in plan.models]
    run_id = backfill.start(plan, "the drivers were missing from the mart's scope")
    assert backfill.status_of(run_id) == "published"
    assert wh.table(f"(select trip_id, driver_name from marts.{MART} where driver_id = 7)") == [(1, "Anna")]
    assert mart(wh) == unscoped(wh)
