"""Backfill planning and argument validation: pure, no Spark."""

from __future__ import annotations

import os
import subprocess
import sys
import time
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
    ["backfill", "--retry-failed", "bf_$(reboot)"],
    ["backfill", "--retry-failed", "bf_20251122_101010_abcdef", "--resume", "bf_20251122_101010_abcdef"],
    ["explain", "fct_orders;drop"],
    ["maintain", "--tables", "raw.orders;drop"],
    # Iceberg removes no orphan file younger than a day: refused here, not by a Java exception later
    ["maintain", "--orphan-days", "0"],
    # the fresh data's lane: a span of local times, checked before anything starts
    ["backfill", "--start", "2025-01-01", "--end", "2025-01-05", "--reason", "r", "--not-during", "5:00-7:30"],
    ["restate", "--reason", "r", "--not-during", "07:30-07:30"],
    ["backfill", "--pause", "--resume", "bf_20251122_101010_abcdef"],
    ["backfill", "--resume", "bf_20251122_101010_abcdef", "--wait", "10"],  # --wait is --pause's
])
def test_cli_refuses_bad_arguments_before_spark_or_any_sql_starts(args, tmp_path: Path):
    env = dict(os.environ, PIPELINE_STATE_DIR=str(tmp_path / "state"))
    result = subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=PROJECT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "refused" in result.stdout
    assert not (tmp_path / "state").exists()  # no metastore, no warehouse: nothing started


@pytest.mark.parametrize("args,message", [
    (["backfill", "--start", "2025-01-01", "--end", "2025-01-05", "--reason", "r", "--parallel", "5"],
     "--parallel must be between 1 and 4 (project var backfill_max_parallel), got 5"),
    (["backfill", "--resume", "bf_20251122_101010_abcdef", "--parallel", "0"], "got 0"),
    (["restate", "--reason", "r", "--parallel", "2"], "--parallel 2: the embedded target runs one dbt invocation"),
    (["backfill", "--start", "2025-01-01", "--end", "2025-01-05", "--reason", "r", "--parallel", "2"],
     "windows at once need a Spark cluster"),
])
def test_parallel_windows_are_capped_and_refused_on_the_embedded_target_before_spark_starts(args, message,
                                                                                            tmp_path: Path):
    env = dict(os.environ, PIPELINE_STATE_DIR=str(tmp_path / "state"))
    env.pop("DBT_TARGET", None)  # the profile's default: embedded
    result = subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=PROJECT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in " ".join(result.stdout.split()), result.stdout
    assert not (tmp_path / "state").exists()  # nothing started


def test_windows_at_once_only_for_models_that_write_and_read_their_own_dates():
    from pipeline.backfill.parallel import split_parallel
    from pipeline.manifest import IncrementalModel

    def model(name: str, event_date: str = "d", upstream: tuple[str, ...] = (), key: str | None = None):
        return IncrementalModel(name, f"marts.{name}", f"{name}_key", event_date=event_date, upstream_models=upstream,
                                scope_key=key, upstream_columns=tuple((u, key) for u in upstream))

    models = [model("dim_a", event_date=None), model("fct_b"), model("fct_c"), model("agg_by_date", upstream=("fct_b",),
                                                                                   key="d"),
              model("agg_by_customer", upstream=("fct_c",), key="customer_key"), model("agg_over_agg",
                                                                                       upstream=("agg_by_customer",),
                                                                                       key="d")]
    partitioned = {"fct_b", "fct_c", "agg_by_date", "agg_by_customer", "agg_over_agg"}
    reads = {"fct_b": set(), "fct_c": {"dim_a"}, "agg_by_date": {"fct_b"}, "agg_by_customer": {"fct_c"},
             "agg_over_agg": {"agg_by_customer"}}
    first, later = split_parallel(models, partitioned, reads)
    assert first == ["fct_b", "agg_by_date"]
    assert later == {
        "dim_a": "its table is not partitioned by its event date",
        "agg_by_customer": "its rows are scoped by customer_key, not by its event date d: a window reads rows of "
                           "other windows' dates",
        "fct_c": "it reads dim_a, which runs later",
        "agg_over_agg": "it reads agg_by_customer, which runs later"}
    # without the dimension in the run, the fact reading it runs its windows at once
    first, later = split_parallel(models[1:3], {"fct_b", "fct_c"}, {"fct_b": set(), "fct_c": set()})
    assert (first, later) == (["fct_b", "fct_c"], {})


def test_the_fresh_datas_span_is_a_daily_local_span_that_a_window_must_not_touch():
    """`HH:MM-HH:MM`: a window that would end inside the span, or starts in it, touches it (and
    says when it closes); one that ends before it does not; a span may cross midnight."""
    from datetime import datetime

    from pipeline.backfill.plan import parse_daily_span

    morning = parse_daily_span("05:00-07:30", "--not-during")
    assert str(morning) == "05:00-07:30"
    assert morning.meets(datetime(2026, 1, 1, 4, 50), 300) is None  # ends 04:55
    assert morning.meets(datetime(2026, 1, 1, 4, 50), 900) == datetime(2026, 1, 1, 7, 30)  # would end 05:05
    assert morning.meets(datetime(2026, 1, 1, 6, 0), 0) == datetime(2026, 1, 1, 7, 30)  # inside it
    assert morning.meets(datetime(2026, 1, 1, 7, 30), 60) is None  # it has closed
    night = parse_daily_span("22:00-02:00", "--not-during")
    assert night.meets(datetime(2026, 1, 1, 1, 0), 0) == datetime(2026, 1, 1, 2, 0)
    assert night.meets(datetime(2026, 1, 1, 21, 0), 3700) == datetime(2026, 1, 2, 2, 0)
    assert night.meets(datetime(2026, 1, 1, 2, 0), 3600) is None
    for bad in ("5:00-7:30", "05:00 - 07:30", "24:00-01:00", "07:30-07:30", 530):
        with pytest.raises(PlanError, match="--not-during"):
            parse_daily_span(bad, "--not-during")


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


def _plan_document(**changes) -> dict:
    """A backfill plan as the runner makes one (plan_document), by hand."""
    document = {
        "plan_version": 1, "kind": "backfill", "reason": "restate January after the price fix",
        "planned_at": "2026-11-30T10:00:00+00:00",
        "parameters": {"start": "2025-01-01", "end": "2025-01-15", "select": "fct_order_item", "batch_days": 7},
        "scope": {"models": ["fct_order_item", "agg_daily_revenue"],
                  "tables": ["marts.fct_order_item", "marts.agg_daily_revenue"],
                  "windows": [{"start": "2025-01-01", "end": "2025-01-08"}, {"start": "2025-01-08", "end": "2025-01-15"}]},
        "code": {"git_commit": "abc", "models": {"fct_order_item": "1" * 64, "stg_shop__orders": "2" * 64},
                 "macros": "3" * 64, "dbt_project": "4" * 64},
        "data": {"snapshots": {"marts.fct_order_item": 11, "raw.orders": 12}},
        "estimate": {"windows": [{"window": "2025-01-01 .. 2025-01-08", "model": "fct_order_item", "partitions": 7,
                                  "live_rows": 70, "data_files": 7, "bytes": 7000}]},
        "gates": ["unique_fct_order_item_order_item_sk"],
    }
    for dotted, value in changes.items():
        section, _, key = dotted.partition("__")
        if key:
            document[section] = {**document[section], key: value}
        else:
            document[section] = value
    return document


def test_a_plan_file_round_trips_and_its_hash_refuses_any_edit(tmp_path: Path):
    from pipeline.backfill import plan_file

    path = tmp_path / "january.yml"
    text = plan_file.dump(_plan_document(), path)
    assert text.startswith("# A backfill plan") and f"pipeline apply {path}" in text
    loaded = plan_file.load(path)
    assert loaded["scope"]["windows"][1] == {"start": "2025-01-08", "end": "2025-01-15"}  # dates stay text
    assert loaded["plan_hash"] == plan_file.plan_hash(_plan_document())
    path.write_text(text.replace("batch_days: 7", "batch_days: 3"))
    with pytest.raises(PlanError, match="edited after planning"):
        plan_file.load(path)


@pytest.mark.parametrize("change,message", [
    ({"kind": "rebuild"}, "kind 'rebuild'"),
    ({"plan_version": 2}, "plan_version 2"),
    ({"reason": ""}, "reason: --reason is required"),
    ({"parameters__start": "2025-01-01'; drop"}, "parameters.start must be a date"),
    ({"parameters__select": "x;y"}, "--select 'x;y'"),
    ({"parameters__batch_days": "7"}, "batch_days must be a number"),
    ({"parameters__windows": [{"start": "2025-01-05", "end": "2025-01-06"}]}, "give parameters.windows or"),
    ({"parameters": {"windows": [{"start": "2025-01-05", "end": "2025-01-03"}], "batch_days": 1}},
     r"windows\[0\] \(2025-01-05 .. 2025-01-03\) is empty"),
    ({"parameters__resume": "bf_x"}, "parameters.resume is not a parameter"),
    ({"scope__models": []}, "scope.models"),
])
def test_a_plan_file_with_a_bad_field_is_refused_by_name(change: dict, message: str, tmp_path: Path):
    from pipeline.backfill import plan_file

    path = tmp_path / "bad.yml"
    plan_file.dump(_plan_document(**change), path)  # sealed: only the field is wrong
    with pytest.raises(PlanError, match=message) as refused:
        plan_file.load(path)
    assert str(path) in str(refused.value)


def test_a_stale_plan_names_each_difference_of_scope_and_code_and_moved_data_only_as_notes():
    from pipeline.backfill import plan_file

    planned = _plan_document()
    same_scope = _plan_document(data__snapshots={"marts.fct_order_item": 15, "raw.orders": 12},
                                code__git_commit="def")
    assert plan_file.differences(planned, same_scope) == []
    assert plan_file.notes(planned, same_scope) == [
        "the project is at commit def, planned at abc (the models and macros in scope are unchanged)",
        "tables committed to since planning: marts.fct_order_item"]
    now = _plan_document(
        scope__models=["fct_order_item", "agg_daily_revenue", "agg_customer_orders"],
        scope__windows=[{"start": "2025-01-01", "end": "2025-01-08"}],
        code__models={"fct_order_item": "9" * 64, "stg_shop__orders": "2" * 64, "dim_channel": "5" * 64},
        code__macros="8" * 64)
    assert plan_file.differences(planned, now) == [
        "scope.models: now only: agg_customer_orders",
        "scope.windows: planned only: {start: 2025-01-08, end: 2025-01-15}",
        "code.models.dim_channel: added",
        "code.models.fct_order_item: its SQL or its configuration changed",
        "code.macros: changed (333333333333 -> 888888888888)"]


def test_apply_refuses_a_plan_file_before_spark_starts(tmp_path: Path, capsys, monkeypatch):
    """An edited plan, a missing one, two at once, and --plan-out with --resume: refused by name,
    exit 2, nothing started. `apply --check` of a sound plan beside one naming a model the
    project does not have: refused too."""
    from pipeline import cli
    from pipeline.backfill import plan_file

    monkeypatch.setenv("PIPELINE_STATE_DIR", str(tmp_path / "state"))
    sound, edited, unknown = tmp_path / "sound.yml", tmp_path / "edited.yml", tmp_path / "unknown.yml"
    plan_file.dump(_plan_document(), sound)
    edited.write_text(sound.read_text().replace("2025-01-15", "2025-02-15"))
    plan_file.dump(_plan_document(scope__models=["fct_order_item", "fct_refunds"]), unknown)
    for args, message in [(("apply", str(edited)), "edited after planning"),
                          (("apply", str(tmp_path / "missing.yml")), "cannot read the plan"),
                          (("backfill", "--resume", "bf_20251122_101010_abcdef", "--plan-out", str(sound)),
                           "--plan-out plans a new backfill"),
                          (("apply", str(sound), str(edited)), "one plan at a time"),
                          (("apply", "--check", str(sound), str(unknown)), "fct_refunds is not a model")]:
        assert cli.main(list(args)) == 2, args
        printed = " ".join(capsys.readouterr().out.split())
        assert "refused" in printed and message in printed, (args, printed)
        assert not (tmp_path / "state" / "metastore_db").exists()  # Spark never started
    assert cli.main(["apply", "--check", str(sound)]) == 0
    assert f"ok {sound}: backfill, 2 windows" in capsys.readouterr().out


def test_the_projects_checked_in_plans_are_sound_and_name_its_models():
    """The reviewed plans of backfill_plans/ (written by --plan-out, never edited): each loads, its
    hash holds, and every model it names is a model of the project (`pipeline apply --check`, as
    a team's CI runs it over its folder of plans)."""
    from pipeline import cli

    plans = sorted((PROJECT / "backfill_plans").glob("*.yml"))
    assert plans, "backfill_plans/ holds the examples' reviewed plan"
    assert cli.main(["apply", "--check", *map(str, plans)]) == 0


def test_a_plan_keeps_any_reason_text_and_refuses_values_no_plan_writes(tmp_path: Path):
    """Unicode in the reason round-trips with its hash; a line separator YAML would not keep is
    refused at planning; a date left unquoted by a formatter, a file not UTF-8: refused by name,
    not a traceback."""
    from pipeline.backfill import plan_file

    path = tmp_path / "unicode.yml"
    reason = "Preisfehler behoben — été 日本 📈, tab\there"
    plan_file.dump(_plan_document(reason=reason), path)
    assert plan_file.load(path)["reason"] == reason
    for control in ("\u0085", "\u2028", "\x7f"):
        with pytest.raises(PlanError, match="control characters"):
            check_reason("fix" + control.encode().decode("unicode_escape") + "x")
    unquoted = tmp_path / "unquoted.yml"
    unquoted.write_text(path.read_text().replace("start: '2025-01-01'", "start: 2025-01-01", 1))
    with pytest.raises(PlanError, match="a field holds a value no plan writes"):
        plan_file.load(unquoted)
    latin = tmp_path / "latin.yml"
    latin.write_bytes(path.read_text().encode("utf-8").replace(b"\xc3\xa9", b"\xe9"))
    with pytest.raises(PlanError, match="not UTF-8"):
        plan_file.load(latin)


def test_a_gate_added_or_dropped_since_planning_makes_the_plan_stale():
    from pipeline.backfill import plan_file

    now = _plan_document(gates=["not_null_fct_order_item_order_date"])
    assert plan_file.differences(_plan_document(), now) == [
        "gates: planned only: unique_fct_order_item_order_item_sk; now only: not_null_fct_order_item_order_date"]


def test_the_code_a_plan_records_changes_with_a_models_yml_not_only_its_sql(monkeypatch):
    """A model's declaration lives in the ymls (unique_key, meta.backfill_safe, partitioning):
    editing it there, SQL unchanged, is different code for a plan; so is a source's contract."""
    import copy

    from pipeline import manifest as manifests

    base = {
        "metadata": {"project_name": "team"},
        "nodes": {
            "model.team.fct": {"name": "fct", "resource_type": "model", "checksum": {"checksum": "s1"},
                               "config": {"unique_key": "id", "meta": {"backfill_safe": {"event_date": "d"}}},
                               "columns": {}, "depends_on": {"nodes": ["source.team.raw.t"]}},
        },
        "sources": {"source.team.raw.t": {"name": "t", "source_name": "raw", "resource_type": "source",
                                          "config": {}, "columns": {"id": {"data_type": "bigint"}}}},
        "macros": {},
    }

    def fingerprint(manifest: dict) -> dict:
        monkeypatch.setattr(manifests, "_manifest", lambda: manifest)
        return manifests.code_fingerprint(["fct"])["models"]

    before = fingerprint(base)
    assert set(before) == {"fct", "source:raw.t"}
    declared = copy.deepcopy(base)
    declared["nodes"]["model.team.fct"]["config"]["meta"]["backfill_safe"]["event_date"] = "other_date"
    contract = copy.deepcopy(base)
    contract["sources"]["source.team.raw.t"]["columns"]["id"]["data_type"] = "string"
    assert fingerprint(declared)["fct"] != before["fct"] and fingerprint(declared)["source:raw.t"] == before["source:raw.t"]
    assert fingerprint(contract)["source:raw.t"] != before["source:raw.t"]


def test_a_pause_that_waits_returns_once_the_warehouse_is_free_and_fails_naming_who_still_holds_it(tmp_path: Path):
    """The daily job's first step (`pipeline backfill --pause --wait S`): it asks the running
    backfill to pause, then waits until no process holds the embedded warehouse, at most S
    seconds: exit 0 once free, 1 naming the holder when the wait ends first."""
    state = tmp_path / "state"
    env = dict(os.environ, PIPELINE_STATE_DIR=str(state))
    env.pop("DBT_TARGET", None)  # the profile's default: embedded
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from pipeline.spark import lock_warehouse; "
         "lock_warehouse(Path(sys.argv[1])); print('held', flush=True); time.sleep(120)", str(state)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"

        def pause(seconds: str) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "pipeline.cli", "backfill", "--pause", "--wait", seconds],
                                  cwd=PROJECT, env=env, capture_output=True, text=True, timeout=120)

        held = pause("2")
        assert held.returncode == 1, held.stdout + held.stderr
        assert held.stderr.strip() == f"error: the embedded warehouse is still held by process {holder.pid} after 2 s"
        assert (state / "backfill.pause").exists()  # the request stays for the backfill to take
        # the holder ends (a backfill paused at its boundary) while the next one waits
        waiting = subprocess.Popen([sys.executable, "-m", "pipeline.cli", "backfill", "--pause", "--wait", "60"],
                                   cwd=PROJECT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        assert waiting.poll() is None  # still waiting
        holder.kill()
        out, err = waiting.communicate(timeout=60)
        assert waiting.returncode == 0 and out.strip().endswith("the warehouse is free"), out + err
    finally:
        holder.kill()
