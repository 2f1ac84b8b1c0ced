"""The landing command: validate first, name the file and column, append all or nothing, and
append exactly what was validated.

The catalogue of refused files and quarantined rows is test_bad_input.py; hostile files by the
thousand, without Spark, test_hostile_files.py."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from helpers import empty_warehouse, order, write_parquet
from hostile_files import BENIGN, HostileFile, hostile_files, hostile_settings, staged_leftovers, tables
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


def test_a_landed_files_path_is_kept_whole_in_the_column_metrics_of_raw_and_of_the_landing_log(
        spark_empty, tmp_path: Path):
    # two files of one folder: their paths share far more than Iceberg's default 16 characters,
    # so truncated bounds could not tell them apart (nor prune the already-landed check to one)
    folder = tmp_path / "a_landing_folder_with_a_long_name"
    first = write_parquet(folder / "orders_0001.parquet", "orders", [order(1, "2025-01-01 10:00")])
    land(spark_empty, [first])
    # a raw table and a log from before the property: the next landing sets it again
    spark_empty.sql("alter table raw.orders unset tblproperties ('write.metadata.metrics.column._source_file')")
    spark_empty.sql("alter table control.landed_files unset tblproperties"
                    " ('write.metadata.metrics.column.source_file')")
    second = write_parquet(folder / "orders_0002.parquet", "orders", [order(2, "2025-01-01 11:00")])
    land(spark_empty, [second])
    for table, column in (("raw.orders", "_source_file"), ("control.landed_files", "source_file")):
        bounds = sorted((r.lo, r.hi) for r in spark_empty.sql(
            f"select readable_metrics.{column}.lower_bound as lo, readable_metrics.{column}.upper_bound as hi"
            f" from {table}.files").collect())
        paths = [str(first.resolve()), str(second.resolve())]
        assert bounds == [(path, path) for path in paths], (table, bounds)


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


def test_a_csv_is_read_by_its_header_names_and_only_an_unquoted_empty_field_is_null(spark_empty, tmp_path: Path):
    # the header's order is not the table's: the two ids and the two times swapped
    path = tmp_path / "orders.csv"
    path.write_text("customer_id,order_id,channel,status,updated_at,ordered_at,is_deleted\n"
                    '7,1,"",NA,2025-01-02 08:00:00,2025-01-01 10:00:00,false\n'
                    "8,2,,NULL,2025-01-02 09:00:00,2025-01-01 11:00:00,1\n")
    land(spark_empty, [path])
    rows = spark_empty.sql("select order_id, customer_id, channel, status, cast(ordered_at as string) as ordered_at,"
                           " cast(updated_at as string) as updated_at, is_deleted from raw.orders order by order_id"
                           ).collect()
    assert [tuple(r) for r in rows] == [
        (1, 7, "", "NA", "2025-01-01 10:00:00", "2025-01-02 08:00:00", False),
        (2, 8, None, "NULL", "2025-01-01 11:00:00", "2025-01-02 09:00:00", True),
    ]
    assert [p.name for p in tmp_path.iterdir()] == ["orders.csv"]  # its staged copy removed


def test_cli_reports_a_rejected_file_and_exits_non_zero(spark_empty, tmp_path: Path, capsys):
    unknown = write_parquet(tmp_path / "invoices.parquet", "orders", [order(1, "2025-01-01 10:00")])
    assert cli(["land", str(unknown)]) == 2
    assert "cannot tell the raw table" in capsys.readouterr().err
    assert raw_count(spark_empty, "orders") == 0


def test_hostile_files_land_all_or_nothing_exactly_as_validated_and_every_row_is_loaded_or_quarantined(
        spark_empty, dbt):
    """Hostile files (hostile_files.py) landed into the raw tables, a batch at a time: a batch
    with a refused file appends nothing of any of its files; else every file's rows are in its
    table exactly as written (a CSV's columns by name, whatever their order; every value as it
    was, SQL, quotes and control characters included; the contract's types), and no staged
    copy is left beside the files. Then the count check holds for every file landed: its rows
    are the versions the staging loads plus those it quarantines (null keys, times far ahead,
    conflicting versions: whatever the drawn values were)."""
    landed_batches = []
    tables()  # the contract, read before the draws (reading it may parse the project)

    @hostile_settings("LANDING_SPARK_CASES", 20)
    @given(batch=st.lists(hostile_files(), min_size=1, max_size=3))
    def land_a_batch(batch: list[HostileFile]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for n, hostile in enumerate(batch):
                (Path(tmp) / str(n)).mkdir()
                paths.append(hostile.write(Path(tmp) / str(n)).resolve())
            try:
                landed = land(spark_empty, paths)
                landed_batches.append(landed)
            except LandingError as refused:
                assert any(h.mutation not in BENIGN for h in batch), refused
                landed = None
            assert staged_leftovers(Path(tmp)) == []
            for hostile, path in zip(batch, paths):
                found = _landed_rows(spark_empty, hostile, path)
                if landed is None:
                    assert found == [], f"{path.name} of a refused batch was appended"
                elif hostile.mutation == "truncate":
                    assert len(found) == [f.rows for f in landed if f.path == path][0]
                else:
                    assert sorted(found, key=repr) == sorted(map(_as_read, hostile.expected()), key=repr), path.name

    try:
        land_a_batch()
        assert landed_batches, "no batch was landed: the draw tests refusals only"
        results = dbt.invoke("test", "--select", "test_name:landed_rows_are_loaded_or_quarantined", check=False)
        failed = {r.name: r.failures for r in results if r.resource_type == "test" and r.status != "pass"}
        assert not failed, failed
    finally:
        empty_warehouse(spark_empty)  # no later test of the session reads these rows (times in year 9999)


def _landed_rows(spark, hostile: HostileFile, path: Path) -> list[dict]:
    """The rows of one file in its raw table, timestamps as microseconds since the epoch (not
    converted to the Python process's time zone)."""
    if not spark.catalog.tableExists(hostile.table.relation):
        return []  # a first batch refused: the landing created no table
    schema = hostile.table.arrow_schema()
    columns = ", ".join(f"unix_micros({f.name}) as {f.name}" if pa.types.is_timestamp(f.type) else f.name
                        for f in schema)
    rows = spark.sql(f"select {columns} from {hostile.table.relation} where _source_file = :f",
                     args={"f": str(path)}).collect()
    return [row.asDict() for row in rows]


def _as_read(row: dict) -> dict:
    return {name: (value - EPOCH) // timedelta(microseconds=1) if isinstance(value, datetime) else value
            for name, value in row.items()}


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)



@pytest.mark.fast
def test_a_commit_refused_by_concurrent_landings_is_tried_again_at_most_five_times_and_nothing_else_is():
    """The bound of the cluster target's retry (the race itself: test_cluster_writers.py)."""
    from pipeline.land import CONFLICT_ATTEMPTS, LandingConflict, _retried

    conflict = ("org.apache.iceberg.exceptions.ValidationException: Found conflicting files that can contain "
                "records matching ref(name=\"_source_file\") == \"/x/orders.parquet\"")
    calls: list[int] = []

    def refused(times: int, error: str = conflict):
        def commit() -> None:
            calls.append(1)
            if len(calls) <= times:
                raise RuntimeError(error)
        return commit

    assert _retried(refused(2), "orders.parquet") == (None, 2) and len(calls) == 3  # the result, the refusals
    calls.clear()  # a MERGE's scan outrun by another landing's commit (seen through a Thrift Server)
    scan_outrun = ("java.lang.IllegalStateException: Runtime file filtering is not possible: the table has been "
                   "concurrently modified. Row-level operation scan snapshot ID: 1, current table snapshot ID: 2.")
    assert _retried(refused(1, scan_outrun), "orders.parquet") == (None, 1) and len(calls) == 2
    calls.clear()  # the append's MERGE reading the file's rows another landing committed after the check
    read_landed = ("org.apache.spark.SparkRuntimeException: [MERGE_CARDINALITY_VIOLATION] The ON search condition of "
                   "the MERGE statement matched a single row from the target table with multiple rows of the source table.")
    assert _retried(refused(1, read_landed), "orders.parquet") == (None, 1) and len(calls) == 2
    calls.clear()
    with pytest.raises(LandingConflict, match=r"^orders\.parquet: refused 5 times by concurrent commits"):
        _retried(refused(99), "orders.parquet")
    assert len(calls) == CONFLICT_ATTEMPTS == 5
    calls.clear()
    with pytest.raises(RuntimeError, match="TABLE_OR_VIEW_NOT_FOUND"):
        _retried(refused(99, "[TABLE_OR_VIEW_NOT_FOUND] raw.orders"), "orders.parquet")
    assert len(calls) == 1  # any other error: at once


def test_a_landing_folder_of_day_folders_lands_only_what_is_new_and_says_when_nothing_is(
        spark_empty, tmp_path: Path, capsys):
    """`pipeline land LANDING`, as the daily job runs it every day over the folder files arrive
    in: the files of its day folders not landed yet, hidden ones left out at every depth; with
    `--nothing-new-exit 99` (Airflow's skip code) a day when nothing arrived exits 99, without it 0."""
    landing = tmp_path / "landing"
    write_parquet(landing / "2025-01-01" / "orders.parquet", "orders", [order(1, "2025-01-01 10:00")])
    write_parquet(landing / "2025-01-02" / "orders-2.parquet", "orders", [order(2, "2025-01-02 10:00")])
    # a killed landing's staged copy and an editor's file: never landed
    write_parquet(landing / "2025-01-02" / ".landing-elsewhere-1" / "orders.parquet", "orders",
                  [order(3, "2025-01-02 11:00")])
    (landing / ".DS_Store").write_bytes(b"\0")
    assert cli(["land", "--nothing-new-exit", "99", str(landing)]) == 0
    assert raw_count(spark_empty, "orders") == 2
    capsys.readouterr()
    assert cli(["land", "--nothing-new-exit", "99", str(landing)]) == 99
    assert capsys.readouterr().out.splitlines()[-1] == "nothing new: 2 files found, none not landed yet"
    assert cli(["land", str(landing)]) == 0  # by default, nothing new is no failure
    write_parquet(landing / "2025-01-03" / "orders-3.parquet", "orders", [order(4, "2025-01-03 10:00")])
    assert cli(["land", "--nothing-new-exit", "99", str(landing)]) == 0
    assert raw_count(spark_empty, "orders") == 3
