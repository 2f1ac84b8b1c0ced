"""Bad input: a clear error that names the file and column and appends nothing, or quarantine.

File-level cases (the landing refuses the whole batch): a new source column, a changed column
type, a dropped column, a malformed CSV row, an empty Parquet file, an empty CSV file, a CSV
body that is not UTF-8, a value that does not parse (test_landing.py).
Row-level cases (the row is quarantined, the rest of the file loads, and the count check
landed = loaded + quarantined holds): a null key, a non-positive key, a null updated_at, an
updated_at in the future (a source clock ahead: it must not drag the watermark), a negative
quantity, a null unit_price, a discount above the gross, an order without customer_id, two
versions of one key with the same updated_at in one file that disagree; exact duplicate versions
collapse to one row.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from domains import SHOP_FACTS, SHOP_ONLY
from helpers import Warehouse, customer, empty_warehouse, item, order, product, ts, write_parquet
from pipeline import contract
from pipeline.dbt import DbtError
from pipeline.land import LandingError, land


ORDERS_HEADER = "order_id,customer_id,channel,status,ordered_at,updated_at,is_deleted\n"
GOOD_CSV_ROW = "1,7,web,placed,2025-01-01 10:00:00,2025-01-01 10:00:00,false\n"


def _parquet(path: Path, table: pa.Table) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def _orders_table(rows: int = 1) -> pa.Table:
    return pa.Table.from_pylist([order(n, "2025-01-01 10:00") for n in range(1, rows + 1)],
                                schema=contract.load().table("orders").arrow_schema())


def _new_column(tmp: Path) -> Path:
    return _parquet(tmp / "orders.parquet", _orders_table().append_column("coupon", pa.array(["X"])))


def _changed_type(tmp: Path) -> Path:
    table = _orders_table()
    index = table.schema.get_field_index("customer_id")
    return _parquet(tmp / "orders.parquet", table.set_column(index, "customer_id", pa.array(["7"])))


def _dropped_column(tmp: Path) -> Path:
    return _parquet(tmp / "orders.parquet", _orders_table().drop(["status"]))


def _malformed_csv(tmp: Path) -> Path:
    path = tmp / "orders.csv"
    path.write_text(ORDERS_HEADER + GOOD_CSV_ROW + "2,7,web,placed,2025-01-01 10:00:00\n")
    return path


def _empty_parquet(tmp: Path) -> Path:
    path = tmp / "orders.parquet"
    path.write_bytes(b"")
    return path


def _empty_csv(tmp: Path) -> Path:
    path = tmp / "orders.csv"
    path.write_bytes(b"")
    return path


def _not_utf8_csv(tmp: Path) -> Path:
    path = tmp / "orders.csv"
    path.write_bytes((ORDERS_HEADER + "1,7,w\xe9b,placed,2025-01-01 10:00:00,2025-01-01 10:00:00,false\n")
                     .encode("latin-1"))
    return path


FILE_CASES = {
    "new source column": (_new_column, r"orders\.parquet: column 'coupon' is not in the contract of raw\.orders"),
    "changed column type": (_changed_type, r"orders\.parquet: column 'customer_id' has type string, raw\.orders expects int64"),
    "dropped column": (_dropped_column, r"orders\.parquet: column 'status' of raw\.orders is missing"),
    "malformed CSV": (_malformed_csv, r"orders\.csv: malformed CSV, a row does not match the header's 7 columns"),
    "empty Parquet file": (_empty_parquet, r"orders\.parquet: not a readable Parquet file"),
    "empty CSV file": (_empty_csv, r"orders\.csv: empty file, no header row"),
    "non-UTF-8 CSV": (_not_utf8_csv, r"orders\.csv: column 'channel' has a value that is not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(FILE_CASES))
def test_a_bad_file_is_refused_by_name_and_nothing_of_its_batch_is_appended(spark, tmp_path: Path, case: str):
    empty_warehouse(spark)
    make, message = FILE_CASES[case]
    good = write_parquet(tmp_path / "good" / "customers.parquet", "customers", [customer(1, "2025-01-01 00:00")])
    (tmp_path / "bad").mkdir()
    bad = make(tmp_path / "bad")
    with pytest.raises(LandingError, match=message):
        land(spark, [good, bad])
    for table in ("customers", "orders"):
        assert not spark.catalog.tableExists(f"raw.{table}") or \
            spark.sql(f"select count(*) from raw.{table}").collect()[0][0] == 0, table


def _line(order_id, order_item_id, updated_at, **changes) -> dict:
    """An order line; `changes` override any column, None included (item() parses its values)."""
    return {**item(order_id, order_item_id, updated_at), **changes}


QUARANTINED = {
    ("order_items", "1|null", "null key order_item_id"),
    ("orders", "-5", "malformed key order_id (not positive)"),
    ("order_items", "2|1", "negative quantity"),
    ("order_items", "2|2", "null unit_price"),
    ("order_items", "2|3", "discount_amount above the gross (quantity x unit_price)"),
    ("order_items", "2|4", "updated_at later than its landing (source clock ahead)"),
    ("orders", "3", "null customer_id"),
    ("customers", "9", "null updated_at"),
    ("order_items", "1|2", "conflicting versions with the same key and updated_at in one file"),
}


def _quarantine(wh: Warehouse) -> set[tuple[str, str, str]]:
    return {(r.source_table, r.record_key, r.reason)
            for r in wh.rows("select source_table, record_key, reason from audit.audit_quarantined_rows")}


def _count_checks(wh: Warehouse) -> dict[str, tuple[str, int]]:
    results = wh.dbt.invoke("test", "--select", "test_name:landed_rows_are_loaded_or_quarantined", check=False)
    return {r.name: (r.status, r.failures) for r in results if r.resource_type == "test"}


def test_bad_rows_are_quarantined_with_their_reason_and_the_rest_loads(warehouse: Warehouse):
    wh = warehouse
    wh.land(customers=[customer(1, "2024-12-01 00:00")], products=[product(1, "2024-12-01 00:00", unit_cost="5.00")],
            orders=[order(1, "2025-01-01 10:00"), order(2, "2025-01-01 11:00")],
            order_items=[_line(1, 1, "2025-01-01 10:00"), _line(1, 2, "2025-01-01 10:00", quantity=2)])
    wh.build_all()
    wh.selection = SHOP_ONLY  # the rides example's models are built (empty): the shop's runs from here
    watermark = wh.watermark("fct_order_item")
    assert watermark == ts("2025-01-01 11:00").replace(tzinfo=None)

    no_time = customer(9, "2025-01-02 00:00")
    no_time["updated_at"] = None
    wh.land(
        customers=[no_time],
        orders=[order(-5, "2025-01-02 09:00"), {**order(3, "2025-01-02 10:00"), "customer_id": None}],
        order_items=[
            _line(1, 1, "2025-01-02 08:00", quantity=3), _line(1, 1, "2025-01-02 08:00", quantity=3),  # exact duplicate
            _line(1, None, "2025-01-02 08:00"),
            _line(1, 2, "2025-01-02 08:00", quantity=4), _line(1, 2, "2025-01-02 08:00", quantity=5),  # conflict
            _line(2, 1, "2025-01-02 08:00", quantity=-1),
            _line(2, 2, "2025-01-02 08:00", unit_price=None),
            _line(2, 3, "2025-01-02 08:00", discount_amount=Decimal("50.00")),  # gross 10.00
            _line(2, 4, "2099-01-01 00:00"),  # a source clock far ahead
            _line(2, 5, "2025-01-02 08:00"),
            _line(3, 1, "2025-01-02 10:00"),  # its order is quarantined: the line waits for it
        ])
    wh.dbt_run()

    assert _quarantine(wh) == QUARANTINED
    # each listed as the source sent it: its declared columns, none of the framework's
    [negative] = wh.rows("select landed_row from audit.audit_quarantined_rows where record_key = '2|1'")
    landed = json.loads(negative.landed_row)
    assert set(landed) == set(_line(2, 1, "2025-01-02 08:00")) and landed["quantity"] == -1, landed
    lines = {key: r.quantity for key, r in wh.fact_lines().items()}
    # 1|1 loads once (duplicates collapse), 1|2 keeps its previous version, 2|5 loads, 3|1 waits for its order
    assert lines == {(1, 1): 3, (1, 2): 2, (2, 5): 1}
    # the future version did not drag the watermark: it is the greatest loaded update time
    assert wh.watermark("fct_order_item") == ts("2025-01-02 10:00").replace(tzinfo=None)
    assert set(_count_checks(wh).values()) == {("pass", 0)}
    assert {r.status for r in wh.dbt.invoke("test", *SHOP_ONLY, check=False) if r.resource_type == "test"} <= {"pass", "warn"}

    # fixed versions landed later supersede the quarantined ones on the next daily run; a normal
    # correction after the future-stamped row is not missed (the watermark was not dragged)
    wh.land(order_items=[_line(2, 1, "2025-01-03 08:00", quantity=1), _line(1, 1, "2025-01-03 08:00", quantity=7)],
            orders=[order(3, "2025-01-02 10:00", "2025-01-03 09:00")])
    wh.dbt_run(*SHOP_FACTS)  # lines and an order header only: nothing new for the dimensions
    lines = {key: r.quantity for key, r in wh.fact_lines().items()}
    assert lines == {(1, 1): 7, (1, 2): 2, (2, 1): 1, (2, 5): 1, (3, 1): 1}
    assert ("order_items", "2|1", "negative quantity") in _quarantine(wh)  # still listed: raw keeps it

    # the count check fails when a landed file lost a row
    wh.spark.sql("delete from raw.order_items where order_id = 2 and order_item_id = 5")
    checks = _count_checks(wh)
    # one check per landed table of every source (the rides example's too): only this one fails
    assert len(checks) == len(contract.load().tables), checks
    assert sorted(checks.values()) == [("fail", 1)] + [("pass", 0)] * (len(checks) - 1), checks
    assert [name for name, (status, _) in checks.items() if status == "fail"][0].startswith(
        "source_landed_rows_are_loaded_or_quarantined_shop_order_items"), checks


def test_a_fact_waits_on_the_unknown_member_and_is_rekeyed_when_its_customer_and_product_arrive(
        warehouse: Warehouse):
    wh = warehouse
    wh.land(customers=[customer(1, "2024-12-01 00:00")], products=[product(1, "2024-12-01 00:00", unit_cost="5.00")],
            orders=[order(10, "2025-01-05 10:00", customer_id=55), order(11, "2025-01-05 11:00"),
                    order(13, "2025-01-05 12:00")],
            order_items=[_line(10, 1, "2025-01-05 10:00", product_id=77), _line(11, 1, "2025-01-05 11:00"),
                         _line(13, 1, "2025-01-05 12:00", product_id=78, quantity=2)])
    results = wh.dbt.invoke("build")
    assert {r.status for r in results if r.resource_type == "test"} <= {"pass", "warn"}  # relationships hold
    wh.selection = SHOP_ONLY  # the rides example's models are built (empty): the shop's runs from here
    line = wh.fact_lines()[(10, 1)]
    assert (line.customer_key, line.product_key, line.cost_amount) == ("-1", "-1", None)
    orders = {r.order_id: r for r in wh.rows("select * from marts.fct_orders")}
    assert orders[10].customer_key == "-1" and orders[10].awaits_product
    assert orders[13].customer_key != "-1" and orders[13].awaits_product and orders[13].cost_amount == 0
    assert wh.rows("select customer_id, segment from marts.dim_customer where customer_key = '-1'")[0] == (-1, "unknown")
    assert wh.rows("select product_id from marts.dim_product where product_key = '-1'")[0].product_id == -1

    # two weeks of other activity: the watermark moves far past the late members' own update times
    wh.land(orders=[order(12, "2025-01-20 10:00")], order_items=[_line(12, 1, "2025-01-20 10:00")])
    wh.dbt_run(*SHOP_FACTS)
    assert wh.fact_lines()[(10, 1)].customer_key == "-1"

    # the customer and the product arrive, stamped long before the window (their own history)
    wh.land(customers=[customer(55, "2024-11-01 00:00")],
            products=[product(77, "2024-11-01 00:00", unit_cost="3.00"), product(78, "2024-11-01 00:00", unit_cost="4.00")])
    wh.dbt_run()
    line = wh.fact_lines()[(10, 1)]
    [customer_key] = wh.rows("select customer_key from marts.dim_customer where customer_id = 55")[0]
    [product_key] = wh.rows("select product_key from marts.dim_product where product_id = 77")[0]
    assert (line.customer_key, line.product_key, line.cost_amount) == (customer_key, product_key, Decimal("3.00"))
    orders = {r.order_id: r for r in wh.rows("select * from marts.fct_orders")}
    assert orders[10].customer_key == customer_key and not orders[10].awaits_product
    # an order whose customer was known all along gets its cost once its line's product arrives
    assert (orders[13].awaits_product, orders[13].cost_amount) == (False, Decimal("8.00"))
    # the facts' and the members' data tests (relationships, reconciliation) hold after the rekey
    results = wh.dbt.invoke("test", "--select", "fct_order_item", "fct_orders", "dim_customer", "dim_product",
                            check=False)
    assert {r.status for r in results if r.resource_type == "test"} <= {"pass", "warn"}
    # the incremental result equals a full refresh
    incremental = {t: wh.table(t) for t in ("marts.fct_order_item", "marts.fct_orders")}
    wh.dbt_run("--full-refresh", "--select", "fct_order_item", "fct_orders")
    assert incremental == {t: wh.table(t) for t in ("marts.fct_order_item", "marts.fct_orders")}


def test_dbt_unit_tests_prove_the_staging_keeps_the_latest_loadable_version(warehouse: Warehouse):
    """dbt's own `unit_tests:` of the examples' staging (models/staging/*/_*__unit_tests.yml):
    given landed versions, the current one per key (a correction, an out-of-order landing, a
    quarantined latest version, a deletion, a key that is not positive, a rule of the rides
    example's own) and the ranking by the contract's update column.
    A unit test reads only the source's column types from the warehouse: one landed line, and
    one customer. The customers' is written as dbt documents a unit test, with no override of a
    framework macro (issue 80: it failed on the landing contract a unit test's empty graph lacks)."""
    warehouse.land(order_items=[item(1, 1, "2025-01-01 10:00")], customers=[customer(1, "2025-01-01 10:00")])
    results = warehouse.dbt.invoke("test", "--select", "test_type:unit", check=False)
    assert {r.name: r.status for r in results if r.resource_type == "unit_test"} == {
        "stg_shop__customers_keeps_the_latest_version_of_each_customer_as_written_by_a_team": "pass",
        "stg_shop__order_items_keeps_the_latest_loadable_version_of_each_line": "pass",
        "stg_shop__order_items_ranks_versions_by_the_contracts_update_column": "pass",
        "stg_rides__trips_loads_only_versions_that_break_no_landing_rule": "pass"}


def test_an_incremental_run_refuses_a_select_whose_types_drifted_from_its_table(warehouse: Warehouse):
    """The examples' marts declare `on_schema_change: fail` and an enforced contract: each
    incremental run's select is compared with the table (the framework's `_is_deleted` flag, which
    the MERGE consumes, left out: spark__check_for_schema_changes), so a table whose column type
    no longer matches the select stops the run, naming the column, and nothing is written; a full
    refresh creates the table again under the contract's types."""
    wh = warehouse
    wh.land(products=[product(1, "2024-12-01 00:00", unit_cost="5.00")])
    wh.dbt_run("--select", "+dim_product")
    wh.land(products=[product(1, "2024-12-02 00:00", unit_cost="6.00")])
    wh.dbt_run("--select", "dim_product")  # the flag in the select is not a schema change
    assert {r.unit_cost for r in wh.rows("select unit_cost from marts.dim_product where product_id = 1")} == {
        Decimal("5.00"), Decimal("6.00")}

    wh.spark.sql("alter table marts.dim_product alter column unit_cost type decimal(14,2)")
    before = wh.snapshot_id("marts.dim_product")
    wh.land(products=[product(1, "2024-12-03 00:00", unit_cost="7.00")])
    [result] = [r for r in wh.dbt.invoke("run", "--select", "dim_product", check=False) if r.name == "dim_product"]
    assert result.status == "error", result
    assert "out of sync" in result.message and "unit_cost" in result.message, result.message
    assert "_is_deleted" not in result.message, result.message
    assert wh.snapshot_id("marts.dim_product") == before

    wh.dbt_run("--full-refresh", "--select", "dim_product")
    [column] = [r for r in wh.rows("describe table marts.dim_product") if r.col_name == "unit_cost"]
    assert column.data_type == "decimal(12,2)"
    assert {r.unit_cost for r in wh.rows("select unit_cost from marts.dim_product where product_id = 1")} == {
        Decimal("5.00"), Decimal("6.00"), Decimal("7.00")}

    # a column the model declares and the table lost (the last one: the metastore refuses to
    # shift the others): the select is written with the table's columns, so it would merge
    # without it; the yml is compared with the table first
    wh.spark.sql("alter table marts.dim_product drop column updated_at")
    before = wh.snapshot_id("marts.dim_product")
    wh.land(products=[product(1, "2024-12-04 00:00", unit_cost="8.00")])
    [result] = [r for r in wh.dbt.invoke("run", "--select", "dim_product", check=False) if r.name == "dim_product"]
    assert result.status == "error", result
    assert "declared columns the table has not: ['updated_at']" in result.message, result.message
    assert wh.snapshot_id("marts.dim_product") == before
