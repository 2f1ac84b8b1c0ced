"""The README's first command, in process on a small sample."""

from __future__ import annotations

import io
import re

from rich.console import Console

from pipeline import main_job
from pipeline.generate import GeneratorConfig


def test_main_job_builds_lands_a_day_of_changes_and_reports_a_clean_reconciliation(spark, dbt):
    out = io.StringIO()
    code = main_job.run(GeneratorConfig(days=3, orders_per_day=25), Console(file=out, width=200))
    text = out.getvalue()
    assert code == 0, text
    assert "incremental run after landing 2025-01-03" in text
    for model in ("fct_order_item", "fct_orders", "dim_customer", "dim_product", "dim_channel", "dim_date"):
        assert model in text
    reconciliation = text.split("reconciliation")[1]
    statuses = re.findall(r"│ (pass|fail|error|warn)\s+│", reconciliation)
    assert statuses == ["pass"] * 4, reconciliation
