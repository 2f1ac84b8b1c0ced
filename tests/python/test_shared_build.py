"""The harness's shared build (helpers.SharedBuild, conftest's `examples_built`): a warehouse
built once per session and put back before each test of the modules that share it, even when
another module emptied the warehouse for its own build in between, or purged the build's files."""

from __future__ import annotations

import re
from pathlib import Path

from helpers import SharedBuild, Warehouse

PROBE = "scratch.shared_build_probe"
TABLES = ("marts.fct_trip", "marts.fct_order_item", "marts.dim_driver", "control.etl_watermark", "raw.trips")


def test_a_shared_build_comes_back_whole_after_another_module_emptied_the_warehouse(examples_built, spark, dbt,
                                                                                  tmp_path: Path):
    wh = examples_built.fresh()
    builds = examples_built.builds
    tables = {t: wh.table(t) for t in TABLES}
    views = _statements(wh)
    assert "marts.fct_trip__current_state" in views and "audit.audit_unreflected_changes" in views
    trips = wh.table("marts.fct_trip__current_state")

    # another module's build: every table and view dropped, one model built anew where it was
    other = Warehouse.empty(spark, dbt, tmp_path)
    other.dbt_run("--select", "dim_date")
    assert "marts.fct_trip__current_state" not in other.views()
    assert not spark.catalog.tableExists("marts.fct_trip")

    again = examples_built.fresh()
    assert examples_built.builds == builds  # put back, not built again
    assert {t: again.table(t) for t in TABLES} == tables
    # the views are back, each as the build created it, reading the tables put back
    assert _statements(again) == views
    assert again.table("marts.fct_trip__current_state") == trips
    assert again.rows("select count(*) as n from audit.audit_unreflected_changes")[0].n == 0


# what every creation of a view writes anew (Iceberg views: their metadata file, uuid, DDL time)
VOLATILE = re.compile(r"^  '(metadata_location|uuid|transient_lastDdlTime)' = .*$\n", re.MULTILINE)


def _statements(wh: Warehouse) -> dict[str, str]:
    """Each view's `show create table`: its columns, properties (the framework's md5 of its
    definition among them) and query, less what every creation writes anew."""
    return {view: VOLATILE.sub("", wh.rows(f"show create table {view}")[0][0]) for view in wh.views()}


def test_a_shared_build_whose_files_were_purged_is_built_again(spark, dbt, tmp_path: Path):
    def build() -> Warehouse:
        warehouse = Warehouse.empty(spark, dbt, tmp_path)
        spark.sql("create database if not exists scratch")
        spark.sql(f"create table {PROBE} (n int) using iceberg")
        spark.sql(f"insert into {PROBE} values (1)")
        return warehouse

    shared = SharedBuild(build)
    wh = shared.fresh()
    wh.spark.sql(f"insert into {PROBE} values (2)")
    assert shared.fresh().table(PROBE) == [(1,)] and shared.builds == 1  # put back
    spark.sql(f"drop table {PROBE} purge")  # as the main job's reset drops every table
    assert shared.fresh().table(PROBE) == [(1,)] and shared.builds == 2  # built again
