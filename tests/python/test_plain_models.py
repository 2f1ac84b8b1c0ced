"""The framework is opt-in: a model is of its kind when it is materialized 'backfill_safe'
(is_framework_model); every other model keeps dbt-spark's own behaviour, even in the
marts folder whose config and hooks it shares, and a run of plain models only sends the framework
no statement. A model that declares half of the kind is refused, naming what is missing. The
plain models are models/marts/plain (var plain_models)."""

from __future__ import annotations

import pytest

from helpers import Warehouse, last_invocation_statements
from pipeline.dbt import DbtError

PLAIN = ("--select", "path:models/marts/plain")


def plain_vars(**values: object) -> tuple[str, str]:
    items = ", ".join(f"{k}: {v}" for k, v in {"plain_models": "true", **values}.items())
    return ("--vars", "{" + items + "}")


@pytest.fixture
def empty(warehouse: Warehouse) -> Warehouse:
    # no control schema either: a team's project before its first framework model
    warehouse.spark.sql("drop table if exists control.etl_watermark")
    warehouse.spark.sql("drop table if exists control.run_records")
    return warehouse


def rows(wh: Warehouse, table: str) -> list[tuple]:
    return [tuple(r) for r in wh.rows(f"select * from marts.{table} order by plain_id, label")]


def test_plain_merge_and_append_models_keep_dbt_sparks_semantics_run_after_run(empty: Warehouse):
    wh = empty
    wh.dbt.invoke("run", *PLAIN, *plain_vars())
    assert rows(wh, "plain_upsert") == [(1, "first"), (2, "second")]
    assert rows(wh, "plain_append") == [(1, "first"), (2, "second")]
    # a second and a third run: dbt-spark's MERGE updates row 1 in place; append adds the rows
    wh.dbt.invoke("run", *PLAIN, *plain_vars(plain_value="again"))
    assert rows(wh, "plain_upsert") == [(1, "again"), (2, "second")]
    wh.dbt.invoke("run", *PLAIN, *plain_vars(plain_value="third"))
    assert rows(wh, "plain_upsert") == [(1, "third"), (2, "second")]
    assert rows(wh, "plain_append") == [(1, "again"), (1, "first"), (1, "third")] + [(2, "second")] * 3
    # dbt-spark's own MERGE, not the framework's (no staged source, no version guard)
    merges = [s for s in last_invocation_statements() if "merge into marts.plain_upsert" in s]
    assert len(merges) == 1 and "update set" in merges[0] and "_is_deleted" not in merges[0], merges

    # and the framework sent nothing: no control table created, no hook statement
    assert not wh.spark.catalog.tableExists("control.etl_watermark")
    assert not wh.spark.catalog.tableExists("control.run_records")
    hooks = [s for s in last_invocation_statements() if '"connection_name": "master"' in s]
    assert hooks == [], hooks


def test_plain_parquet_tables_build_again_and_refresh_on_the_profiles_catalog(empty: Warehouse):
    """dbt-spark drops a Parquet table before it builds it again; Iceberg's session catalog left
    the dropped table's folder behind and the second build failed with LOCATION_ALREADY_EXISTS
    (the profile's backfill_safe.SessionCatalog drops it as Spark does)."""
    wh = empty
    parquet = ("--select", "plain_parquet_table", "plain_parquet_overwrite")
    wh.dbt.invoke("run", *parquet, *plain_vars())
    for value in ("again", "third"):
        wh.dbt.invoke("run", *parquet, *plain_vars(plain_value=value))
        # rebuilt: the new rows only, none of an earlier build's files read back
        assert rows(wh, "plain_parquet_table") == [(1, value), (2, "second")]
        # the partition its select returned overwritten, the other one kept
        assert sorted(wh.rows("select plain_id, label from marts.plain_parquet_overwrite")) == [
            (1, value), (2, "second")]
    wh.dbt.invoke("run", *parquet, "--full-refresh", *plain_vars(plain_value="refreshed"))
    assert sorted(wh.rows("select plain_id, label from marts.plain_parquet_overwrite")) == [
        (1, "refreshed"), (2, "second")]
    assert [r[0] for r in wh.rows("describe table extended marts.plain_parquet_table")
            if r[0] == "Provider" and r[1] == "parquet"] == ["Provider"]
    # and a dropped Parquet table takes its folder with it (Iceberg's catalog kept it)
    location = next(r[1] for r in wh.rows("describe table extended marts.plain_parquet_table") if r[0] == "Location")
    wh.spark.sql("drop table marts.plain_parquet_table")
    assert not wh.spark._jvm.java.io.File(location.removeprefix("file:")).exists()


def test_a_run_with_a_framework_model_records_the_plain_models_beside_it(empty: Warehouse):
    wh = empty
    results = {r.name: r.status for r in wh.dbt.invoke("run", *PLAIN, "dim_date", *plain_vars())
               if r.resource_type == "model"}
    assert results == {"plain_upsert": "success", "plain_append": "success", "plain_parquet_table": "success",
                       "plain_parquet_overwrite": "success", "dim_date": "success"}
    records = {r.model_name: r for r in wh.rows(
        f"select * from control.run_records where invocation_id = '{wh.dbt.last_invocation_id()}'")}
    assert set(records) == set(results)
    assert records["dim_date"].snapshots_committed == 1
    assert records["plain_upsert"].snapshots_committed == 1  # an Iceberg table: its snapshots read
    # a plain model has no watermark (dim_date reads no source: none either)
    assert wh.rows("select pipeline_name from control.etl_watermark") == []


@pytest.mark.parametrize(("model", "message"), [
    ("half_declared_merge_source",
     "its select ends with merge_source(), the old way of the framework's kind: set "
     "materialized='backfill_safe' and end the select with the model's rows"),
    ("half_declared_meta",
     "it declares config.meta.backfill_safe, but it is not materialized 'backfill_safe'"),
    ("half_declared_kind",
     "materialized='backfill_safe' needs one unique_key column (it is None), file_format='iceberg' "
     "(it is 'parquet') (docs/guides/add-a-source-and-a-model.md)"),
])
def test_a_half_declared_model_is_refused_naming_what_is_missing(empty: Warehouse, model: str, message: str):
    # refused before the run starts (on-run-start checks every selected model), nothing built
    with pytest.raises(DbtError) as refused:
        empty.dbt.invoke("run", "--select", model, "--vars", "{plain_models: true, half_declared_models: true}")
    assert f"model {model} (models/marts/plain/{model}.sql): {message}" in str(refused.value), refused.value
    assert not empty.spark.catalog.tableExists(f"marts.{model}")
