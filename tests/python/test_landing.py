"""The landing command: validate first, name the file and column, append all or nothing.

The catalogue of refused files and quarantined rows is test_bad_input.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import empty_warehouse, order, write_parquet
from pipeline.cli import main as cli
from pipeline.land import LandingError, land


@pytest.fixture
def spark_empty(spark):
    empty_warehouse(spark)
    return spark


def raw_count(spark, table: str) -> int:
    if not spark.catalog.tableExists(f"raw.{table}"):
        return 0
    return spark.sql(f"select count(*) from raw.{table}").collect()[0][0]


def test_landing_appends_and_stamps_loaded_at_and_source_file(spark_empty, tmp_path: Path):
    path = write_parquet(tmp_path / "orders.parquet", "orders", [order(1, "2025-01-01 10:00"), order(2, "2025-01-01 11:00")])
    [landed] = land(spark_empty, [path])
    assert (landed.table, landed.relation, landed.rows, landed.skipped) == ("shop.orders", "raw.orders", 2, False)
    rows = spark_empty.sql("select _loaded_at, _source_file from raw.orders").collect()
    assert len(rows) == 2 and all(r._loaded_at is not None for r in rows)
    assert {r._source_file for r in rows} == {str(path.resolve())}


def test_landing_the_same_file_twice_appends_it_once(spark_empty, tmp_path: Path):
    path = write_parquet(tmp_path / "orders.parquet", "orders", [order(1, "2025-01-01 10:00")])
    land(spark_empty, [path])
    [again] = land(spark_empty, [path])
    assert again.skipped and raw_count(spark_empty, "orders") == 1


def test_csv_is_landed_and_a_value_that_does_not_parse_is_rejected_by_column(spark_empty, tmp_path: Path):
    header = "order_id,customer_id,channel,status,ordered_at,updated_at,is_deleted\n"
    good = tmp_path / "orders.csv"
    good.write_text(header + "1,7,web,placed,2025-01-01 10:00:00,2025-01-01 10:00:00,false\n")
    bad = tmp_path / "orders-2.csv"
    bad.write_text(header + "2,seven,web,placed,2025-01-01 10:00:00,2025-01-01 10:00:00,false\n")
    with pytest.raises(LandingError, match=r"orders-2\.csv: column 'customer_id' has a value that does not parse"):
        land(spark_empty, [good, bad])
    assert raw_count(spark_empty, "orders") == 0
    land(spark_empty, [good])
    row = spark_empty.sql("select customer_id, ordered_at from raw.orders").collect()[0]
    assert row.customer_id == 7 and str(row.ordered_at) == "2025-01-01 10:00:00"


def test_cli_reports_a_rejected_file_and_exits_non_zero(spark_empty, tmp_path: Path, capsys):
    unknown = write_parquet(tmp_path / "invoices.parquet", "orders", [order(1, "2025-01-01 10:00")])
    assert cli(["land", str(unknown)]) == 2
    assert "cannot tell the raw table" in capsys.readouterr().err
    assert raw_count(spark_empty, "orders") == 0

