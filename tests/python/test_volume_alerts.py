"""Volume alert on what a daily run wrote: `run_delta_within_band` (a daily run's added records
against the trailing runs) on control.run_records, with a hand-made history of runs.

(`volume_within_band`, rows per order date on the facts' data, quiet on the generator's normal
days and firing on an injected spike or drop, is tested in test_generated_days.py on the
warehouse that module builds from generated days.)
"""

from __future__ import annotations

from helpers import Warehouse

ERROR = ("--vars", '{"volume_alert_severity": "error"}')


def test_run_delta_within_band_compares_the_latest_run_with_the_trailing_runs(warehouse: Warehouse):
    # the test reads control.run_records only: its table, no data in the facts, is all it needs
    warehouse.dbt.invoke("run-operation", "ensure_control_tables")

    def history(latest: int) -> None:
        """Six daily runs of fct_order_item adding about 100 records, then one adding `latest`."""
        warehouse.spark.sql("delete from control.run_records")
        added = [100, 90, 110, 105, 95, 100, latest]
        values = ", ".join(
            f"('inv{n}', 'fct_order_item', 'marts.fct_order_item', 'success', timestamp'2025-02-01 00:00:00'"
            f" + make_dt_interval({n}, 0, 0, 0), null, null, null, null, null, null, 1, {a}, 0, 1, 0, 1, '',"
            " current_timestamp())" for n, a in enumerate(added))
        warehouse.spark.sql(f"insert into control.run_records values {values}")

    def status() -> str:
        [result] = [r for r in warehouse.dbt.invoke("test", "--select", "test_name:run_delta_within_band,fct_order_item",
                                                    *ERROR, check=False) if r.resource_type == "test"]
        return result.status

    history(120)
    assert status() == "pass"
    history(1000)
    assert status() == "fail"
    history(5)
    assert status() == "fail"
