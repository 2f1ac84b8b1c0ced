"""The status page's rendering (pipeline.report.render and templates/status.html.j2), on a
report built here: no Spark (the tests marked fast). What a real warehouse puts on it, seen in a
real browser, is test_status_page_renders_in_a_real_browser_with_the_figures_of_a_known_run;
a source with nothing landed, on the session's shared build of the examples, is here."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from decimal import Decimal

import pytest

from helpers import SharedBuild
from pipeline import cli, metrics, report

HOSTILE = "<script>alert('x')</script> & \"quoted\""


def known_report(**overrides) -> report.Report:
    page = report.Report(generated_at=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), days=3)
    page.runs = [{"started_at": datetime(2025, 1, day, 1), "model_name": "fct_a", "status": "success",
                  "window_start": None, "window_end": None, "snapshots_committed": 1, "added_records": added,
                  "deleted_records": 0, "changed_partitions": 1, "watermark_before": None,
                  "watermark_after": datetime(2025, 1, day), "invocation_id": HOSTILE}
                 for day, added in ((2, 7), (1, 5))]  # newest first, as collected
    page.daily = {"fct_a": report.ModelDaily("order_date", ("net_amount",), [
        {"event_date": f"2025-01-0{i}", "source_rows": i, "mart_rows": i, "source_0": Decimal(i * 10),
         "mart_0": Decimal(i * 10 - 1)} for i in (1, 2, 3)])}
    page.undeclared = ["dim_x"]
    page.alerts = [f"fct_a: {HOSTILE}"]
    page.volume_silent = [f"volume_within_band on fct_a (order_date) cannot fire: {HOSTILE}"]
    for name, value in overrides.items():
        setattr(page, name, value)
    return page


@pytest.mark.fast
def test_every_value_is_escaped_and_every_section_is_drawn():
    html = report.render(known_report())
    assert "<script>" not in html and "&lt;script&gt;alert(" in html
    for section in ("alerts", "volume", "pipelines", "metrics", "consumption", "freshness", "daily", "runs", "reads",
                    "backfills"):
        assert f'<h2 id="{section}">' in html, section
    assert 'id="no-models-over-models"' in html  # none in this report: said, not left out
    # the declared model: a line per series (source and mart) with a dot per date, and its table
    assert re.findall(r'<polyline class="series" data-series="([^"]+)"', html) == [
        "source net_amount", "mart net_amount"]
    assert html.count("<circle ") == 6
    assert "<td>2025-01-03</td><td>3</td><td>3</td><td>30</td><td>29</td><td>1</td>" in html
    # the runs' bars, oldest first, one per daily run: the later run added more
    bars = re.findall(r'<rect class="bar" x="[^"]+" y="[^"]+" width="[^"]+" height="([^"]+)"', html)
    assert len(bars) == 2 and float(bars[1]) > float(bars[0])
    assert "no daily reconciliation" in html and "dim_x" in html
    assert "no scan records yet" in html  # reads None: said, not left out


@pytest.mark.fast
def test_each_aggregate_shows_the_upstream_run_it_holds_and_how_far_behind_it_is():
    """A model over models (an aggregate) gets a row per upstream on the page, as in `pipeline
    status`: the upstream run it is current with, the upstream runs since, the lag through it."""
    held = metrics.Consumption("agg_a", "fct_a", datetime(2025, 1, 2, 1, 0, 0), 1, 7200, "mark")
    html = report.render(known_report(metrics=[
        metrics.ModelMetrics("agg_a", 3, 0.0, 7200, 0, None, None, None, None, (held,)),
        metrics.ModelMetrics("fct_a", 9, 0.0, 60, 0, None, None, None, None)]))
    assert "<td>agg_a</td><td>fct_a</td><td>2025-01-02 01:00:00</td><td>1</td><td>2.0 hours</td><td>mark</td>" \
        in html, html
    assert 'id="no-models-over-models"' not in html


@pytest.mark.fast
def test_a_run_record_without_a_start_is_drawn_as_not_started():
    """A model skipped in its invocation (its parent failed in a first build) leaves a run record
    with no started_at: the page is drawn, the run's bar labelled, instead of a TypeError."""
    page = known_report()
    page.runs = [{**page.runs[0], "started_at": None, "status": "skipped", "added_records": None}, *page.runs[1:]]
    html = report.render(page)
    assert "not started" in html and "skipped" in html


@pytest.mark.fast
def test_a_page_without_alerts_says_so():
    html = report.render(known_report(alerts=[], reads=[], volume_silent=[]))
    assert '<p class="ok" id="no-alerts">no alerts</p>' in html
    assert 'id="volume-can-fire"' in html
    assert "no scan records yet" not in html


def test_a_source_with_nothing_landed_shows_as_nothing_landed_yet_and_raises_no_alert(
    examples_built: SharedBuild, tmp_path: Path, capsys: pytest.CaptureFixture
):
    """A declared source whose raw table is empty: `dbt source freshness` gives its max(updated_at)
    as 0001-01-01 (an age of ~739,948 days, status error); the page says nothing landed yet, with
    no latest update and no age, and raises no staleness alert for it. `pipeline report
    --fail-on-alerts` (the daily job's last step) prints the same alerts and exits 3."""
    built = examples_built.fresh()  # every source landed: the base events of both domains
    # emptied: to dbt the same as a table nothing ever landed into (max(updated_at) is null)
    built.spark.sql("delete from raw.drivers")
    page = report.collect(built.spark, built.dbt)
    freshness = {f.source: f for f in page.freshness}
    drivers = freshness["rides.drivers"]
    assert (drivers.status, drivers.max_loaded_at, drivers.age_seconds) == ("nothing landed yet", None, None)
    assert not [a for a in page.alerts if a.startswith("source rides.drivers ")], page.alerts
    # a landed source keeps its figures: the base events are from 2025, past error_after today
    trips = freshness["rides.trips"]
    assert (trips.status, f"{trips.max_loaded_at:%Y-%m-%d %H:%M}") == ("error", "2025-01-10 10:00")
    assert any(a.startswith("source rides.trips is error: latest update 2025-01-10") for a in page.alerts)
    html = report.render(page)
    assert "<tr><td>rides.drivers</td><td>nothing landed yet</td><td>-</td><td>-</td></tr>" in html
    assert "0001-01-01" not in html
    # and the page's volume section, on the same build: three trips over nine dates
    silent = ("volume_within_band on fct_trip (trip_date) cannot fire: its trailing median is 0 rows a date,"
              " below min_trailing_mean 10")
    assert silent in page.volume_silent and f"<li>{silent}</li>" in html, page.volume_silent
    # the daily job's last step: the page written, its alerts printed, exit 3 (a failed task)
    capsys.readouterr()
    assert cli.main(["report", "--out", str(tmp_path / "status.html"), "--fail-on-alerts"]) == 3
    printed = capsys.readouterr().out
    assert "alert: source rides.trips is error: latest update 2025-01-10" in printed, printed
    assert "alert: source rides.drivers " not in printed, printed
    assert (tmp_path / "status.html").exists()
