"""Backfill planning and argument validation: pure, no Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

from pipeline.backfill.plan import (PlanError, check_reason, check_run_id, parse_date, parse_selectors, windows,
                                    windows_for_dates)

pytestmark = pytest.mark.fast

PROJECT = Path(__file__).resolve().parents[2]


def test_windows_cover_the_range_without_gaps_or_overlap_and_respect_the_batch_size():
    result = windows(date(2025, 1, 1), date(2025, 1, 11), 3, 31)
    assert [(w.start.day, w.end.day) for w in result] == [(1, 4), (4, 7), (7, 10), (10, 11)]
    assert [w.index for w in result] == [0, 1, 2, 3]
    assert result[0].dbt_vars == {"backfill_start": "2025-01-01", "backfill_end": "2025-01-04"}


@pytest.mark.parametrize("start,end,batch,message", [
    (date(2025, 1, 5), date(2025, 1, 5), 1, "must be before"),
    (date(2025, 1, 5), date(2025, 1, 1), 1, "must be before"),
    (date(2025, 1, 1), date(2025, 3, 1), 0, "between 1 and 31"),
    (date(2025, 1, 1), date(2025, 3, 1), 32, "between 1 and 31"),
])
def test_bad_ranges_and_batch_sizes_are_refused(start, end, batch, message):
    with pytest.raises(PlanError, match=message):
        windows(start, end, batch, 31)


@pytest.mark.parametrize("text", ["2025-1-01", "2025-02-30", "2025-01-01' or '1'='1", "yesterday", "", "2025-01-01;"])
def test_dates_are_strict(text):
    with pytest.raises(PlanError, match="--start"):
        parse_date(text, "--start")


@pytest.mark.parametrize("text", ["fct_orders; drop table raw.orders", "fct_orders'", "tag:x", "../models",
                                  "fct_orders --full-refresh", "fct_orders+ $(rm -rf /)", "+"])
def test_selectors_accept_only_model_names_with_graph_operators(text):
    with pytest.raises(PlanError, match="--select"):
        parse_selectors(text)


def test_valid_selectors_and_reason_pass():
    assert parse_selectors("fct_order_item, +dim_product+") == ["fct_order_item", "+dim_product+"]
    assert check_reason("  restate January after the price fix ") == "restate January after the price fix"
    assert check_run_id("bf_20251122_101010_abcdef") == "bf_20251122_101010_abcdef"


@pytest.mark.parametrize("reason", ["", "   ", "x" * 501, "line\nbreak\x00"])
def test_reason_is_required_and_bounded(reason):
    with pytest.raises(PlanError, match="--reason"):
        check_reason(reason)


@pytest.mark.parametrize("run_id", ["bf_1", "bf_20251122_101010_abcdef' or 1=1", "x; ls"])
def test_run_ids_are_strict(run_id):
    with pytest.raises(PlanError, match="run id"):
        check_run_id(run_id)


@pytest.mark.parametrize("args", [
    ["backfill", "--start", "2025-01-01' --", "--end", "2025-01-05", "--reason", "r"],
    ["backfill", "--start", "2025-01-01", "--end", "2025-01-05", "--select", "x;y", "--reason", "r"],
    ["backfill", "--start", "2025-01-01", "--end", "2025-01-05"],
    ["rollback", "bf_$(reboot)"],
    # a rehearsal of a resume or an abandon would otherwise resume or abandon for real
    ["backfill", "--resume", "bf_20251122_101010_abcdef", "--dry-run"],
    ["backfill", "--abandon", "bf_20251122_101010_abcdef", "--dry-run"],
    ["explain", "fct_orders;drop"],
    ["maintain", "--tables", "raw.orders;drop"],
    # Iceberg removes no orphan file younger than a day: refused here, not by a Java exception later
    ["maintain", "--orphan-days", "0"],
])
def test_cli_refuses_bad_arguments_before_spark_or_any_sql_starts(args, tmp_path: Path):
    env = dict(os.environ, PIPELINE_STATE_DIR=str(tmp_path / "state"))
    result = subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=PROJECT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "refused" in result.stdout
    assert not (tmp_path / "state").exists()  # no metastore, no warehouse: nothing started


def test_explain_refuses_a_model_not_of_the_framework_kind_before_spark_starts(tmp_path: Path):
    env = dict(os.environ, PIPELINE_STATE_DIR=str(tmp_path / "state"))
    result = subprocess.run([sys.executable, "-m", "pipeline.cli", "explain", "fct_orders", "stg_orders"],
                            cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "refused: stg_orders is not an incremental model of the framework's kind" in " ".join(result.stdout.split())
    assert "fct_orders" in result.stdout  # the models of the kind are listed
    assert not (tmp_path / "state" / "metastore_db").exists()  # dbt parsed; Spark never started


def test_restate_windows_cover_exactly_the_given_dates():
    d = date
    days = [d(2025, 1, 1), d(2025, 1, 2), d(2025, 1, 3), d(2025, 1, 9), d(2025, 1, 2), d(2025, 2, 1)]
    assert [(w.index, str(w.start), str(w.end)) for w in windows_for_dates(days, 2, 31)] == [
        (0, "2025-01-01", "2025-01-03"), (1, "2025-01-03", "2025-01-04"),
        (2, "2025-01-09", "2025-01-10"), (3, "2025-02-01", "2025-02-02")]
    with pytest.raises(PlanError, match="batch-days"):
        windows_for_dates(days, 0, 31)
    with pytest.raises(PlanError, match="no dates"):
        windows_for_dates([], 7, 31)


def test_explain_never_shows_more_files_of_a_table_than_the_table_has():
    """A `ran` read of 3 scans of a table of 33 data files planned 70 files over all: summed over
    the scans, they are no share of the table. The largest scan's files are shown "of" the
    table's, the sum apart and labelled; a planned scan's count above the table's (a file split
    in several tasks) is not shown "of" it either."""
    import io
    import re

    from rich.console import Console

    from pipeline.cli.inspection import _print_explanation
    from pipeline.explain import Explanation, PlannedScan, ReadRan

    read = ReadRan(table="marts.fct_orders", role="target", scans=3, data_files=70, largest_scan_files=30,
                   rows=1200, filters=("order_date >= 2025-01-01",), table_data_files=33, table_partitions=12)
    merge = PlannedScan(statement="merge", table="marts.fct_orders", role="target", data_files=40, delete_files=2,
                        bytes=1000, partitioned=True, partitions=("order_date=2025-01-10",), filters=None,
                        runtime_filters=None, table_data_files=33, table_partitions=12)
    out = io.StringIO()
    _print_explanation(Console(file=out, width=250), Explanation(
        model="fct_orders", relation="marts.fct_orders", statements=(), scans=(merge,), ran=(read,)))
    text = out.getvalue()
    assert "70 of 33" not in text and "40 of 33" not in text
    assert "30 of 33" in text and "largest of 3 scans; 70 planned over all" in text
    shares = [(int(part), int(whole)) for part, whole in re.findall(r"(\d+) of (\d+)", text.replace(",", ""))]
    assert shares and all(part <= whole for part, whole in shares), shares
