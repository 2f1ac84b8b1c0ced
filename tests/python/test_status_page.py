"""The status page's rendering (pipeline.report.render and templates/status.html.j2), on a
report built here: no Spark. What a real warehouse puts on it, seen in a real browser, is
test_status_page_renders_in_a_real_browser_with_the_figures_of_a_known_run."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from pipeline import report

pytestmark = pytest.mark.fast

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
    for name, value in overrides.items():
        setattr(page, name, value)
    return page


def test_every_value_is_escaped_and_every_section_is_drawn():
    html = report.render(known_report())
    assert "<script>" not in html and "&lt;script&gt;alert(" in html
    for section in ("alerts", "pipelines", "metrics", "freshness", "daily", "runs", "reads", "backfills"):
        assert f'<h2 id="{section}">' in html, section
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


def test_a_page_without_alerts_says_so():
    html = report.render(known_report(alerts=[], reads=[]))
    assert '<p class="ok" id="no-alerts">no alerts</p>' in html
    assert "no scan records yet" not in html
