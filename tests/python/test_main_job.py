"""The README's first command, in process on a small sample (the session's `main_job_sample`,
which test_cluster compares with the same job on the cluster)."""

from __future__ import annotations

import re

from helpers import MainJobRun


def test_main_job_builds_lands_a_day_of_changes_and_reports_a_clean_reconciliation(main_job_sample: MainJobRun):
    text = main_job_sample.output
    assert main_job_sample.exit_code == 0, text
    assert "incremental run after landing 2025-01-03" in text
    for model in ("fct_order_item", "fct_orders", "dim_customer", "dim_product", "dim_channel", "dim_date"):
        assert model in text
    reconciliation, freshness = text.split("reconciliation")[1].split("freshness (dbt source freshness")
    statuses = re.findall(r"│ (pass|fail|error|warn)\s+│", reconciliation)
    # two reconciliation tests per declared model: the shop's two facts and the rides example's
    # fct_trip (its tables are empty in the shop's sample: both pass)
    assert statuses == ["pass"] * 6, reconciliation
    assert "fct_trip" in reconciliation
    # the generator writes no bad rows: nothing quarantined, and the count checks passed
    assert "no landed row was set aside" in text
    # dbt source freshness on the update timestamps: the sample is from 2025, so every source is
    # past error_after (3 days); and each pipeline's watermark lag
    for source in ("orders", "order_items", "customers", "products"):
        assert re.search(rf"shop\.{source}\s+│ error\s+│ 2025-01-0\d", freshness), freshness
    for pipeline in ("fct_order_item", "fct_orders", "dim_customer", "dim_product"):
        assert re.search(rf"pipeline {pipeline}\s+│ watermark\s+│ 2025-01-0\d [\d:.]+\s+│ \d+\.\d d", freshness), freshness

    # every mart's yml documents exactly its table's columns, in order (merge_source relies on it)
    import yaml

    from pipeline import paths

    marts = yaml.safe_load((paths.PROJECT_DIR / "models" / "marts" / "_marts__models.yml").read_text())["models"]
    assert sorted(m["name"] for m in marts) == sorted(main_job_sample.columns)
    for model in marts:
        assert main_job_sample.columns[model["name"]] == [c["name"] for c in model["columns"]], model["name"]
