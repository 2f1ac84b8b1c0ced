"""A project of a team's count of declared models (generated: harness.generated_project), not
the examples' six: it builds, runs a daily run, and its audit of unreflected changes lists a
late row for every model that holds it (issue 78: at 8 declared models the audit view was one
view whose text outgrew the embedded metastore's 32,700-character column, and `dbt build`
crashed at its end). The audit is a tree of views, none of whose text grows with the project."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from harness.generated_project import write_project
from helpers import Warehouse, driver, trip
from pipeline import iceberg
from pipeline.dbt import Dbt, DbtError

GENERATED = 14  # with the examples' six: 20 declared models, the issue's floor
METASTORE_VIEW_TEXT = 32_700  # Derby's LONG VARCHAR, the embedded metastore's view text column


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    dest = tmp_path_factory.mktemp("generated") / "project"
    return dest, write_project(dest, GENERATED)


def test_a_project_of_20_declared_models_runs_its_day_and_its_audit_lists_a_late_row_of_each(spark, dbt, project,
                                                                                      tmp_path: Path):
    dest, generated = project
    wh = Warehouse.empty(spark, dbt, tmp_path)
    team = Dbt(quiet=True, project_dir=dest)
    selected = ("--select", "+path:models/marts/generated", "fct_trip")
    wh.land(drivers=[driver(7, "2024-12-01 00:00", rate="0.2000")],
            trips=[trip(1, "2025-01-02 10:00", fare="20.00"), trip(2, "2025-01-10 10:00", fare="30.00")])
    # a run, not a build: the point is the number of declared models, not their data tests
    built = team.invoke("run", *selected)
    assert {r.name for r in built if r.resource_type == "model"} >= set(generated)

    # the next day: trip 1 corrected with an update time before the window (the watermark
    # 2025-01-10 10:00 minus the 2-day lookback), and a new trip 4
    wh.land(trips=[trip(1, "2025-01-02 10:00", "2025-01-03 09:00", fare="25.00"),
                   trip(4, "2025-01-11 10:00", fare="40.00")])
    team.invoke("run", *selected)
    spark.sql("refresh table audit.audit_unreflected_changes")
    audit = wh.rows("select model_name, unique_key, problem, differing_columns from audit.audit_unreflected_changes")
    assert sorted((r.model_name, r.unique_key, r.problem) for r in audit) == sorted(
        [(name, "1", "stale") for name in [*generated, "fct_trip"]]
        # the examples' other declared models are not selected: listed as not built, by name
        + [(name, None, "not built") for name in
           ("agg_customer_orders", "agg_daily_city_trips", "agg_daily_revenue", "fct_order_item", "fct_orders")])
    assert {r.differing_columns for r in audit if r.problem == "stale"} == {"fare_amount, commission_amount, updated_at"}
    for name in generated:  # the day's new trip reached every one of them
        assert {r.trip_id: r.fare_amount for r in wh.rows(f"select * from marts.{name}")} == {
            1: Decimal("20.00"), 2: Decimal("30.00"), 4: Decimal("40.00")}
    # `pipeline status` reads the audit a few models a query (one query of every model's audit ran
    # the driver out of memory at 100): each model's late row, whichever query read it
    from pipeline.backfill.late_policy import AUDITS_TOGETHER, late_by_model
    assert len(iceberg.audit_chunks(spark, "audit.audit_unreflected_changes", AUDITS_TOGETHER)) >= 4
    late = {m.model_name: (m.restatable, m.not_built) for m in late_by_model(spark, "audit.audit_unreflected_changes")}
    assert {name: late.get(name) for name in [*generated, "fct_trip"]} == {
        name: (1, None) for name in [*generated, "fct_trip"]}
    # every model covered, and no view of the tree near the metastore's limit
    assert iceberg.audited_models(spark, "audit.audit_unreflected_changes") >= {*generated, "fct_trip"}
    views = [r.viewName for r in wh.rows("show views in audit") if not r.isTemporary]
    assert len([v for v in views if v.startswith("unreflected_changes__")]) > len(generated)
    for view in views:
        text = wh.rows(f"show create table audit.{view}")[0][0]
        assert len(text) < METASTORE_VIEW_TEXT // 2, (view, len(text))

    # a schema change half done on one of them (a column added to its table and to its current
    # state with types that cannot be compared): its new audit cannot be analysed. The run's hook
    # fails by name, dbt reports it as the hook's error (not "keyboard interrupt" with ERROR=0),
    # and the audit readers use is left as it was
    state = f"marts.{generated[0]}__current_state"
    created = wh.rows(f"show create table {state}")[0][0]
    original = re.split(r"\nAS ", created, maxsplit=1)[1]
    spark.sql(f"alter table marts.{generated[0]} add column zone array<int>")
    spark.sql(f"drop view {state}")
    spark.sql(f"create view {state} as select *, 'north' as zone from ({original}) as state")
    try:
        with pytest.raises(DbtError) as failed:
            team.invoke("run", "--select", generated[1])
        assert failed.value.exception is None, failed.value.exception  # not raised while dbt compiled the hook
        [hook] = [f for f in failed.value.failures if "on-run-end" in f]
        assert "audit.audit_unreflected_changes not replaced (the previous one is kept)" in hook, hook
        assert f"the audit of {generated[0]}: [DATATYPE_MISMATCH" in hook, hook
        spark.sql("refresh table audit.audit_unreflected_changes")
        assert sorted(wh.rows("select model_name, unique_key, problem, differing_columns"
                              " from audit.audit_unreflected_changes")) == sorted(audit)
    finally:
        spark.sql(f"drop view {state}")
        spark.sql(f"create view {state} as {original}")
