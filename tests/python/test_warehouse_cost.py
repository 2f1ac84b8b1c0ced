"""The cost harness of the generated warehouse (harness.warehouse_cost): its tables as files."""

from __future__ import annotations

import pytest


@pytest.mark.fast
def test_the_cost_tables_keep_the_figures_of_a_size_that_failed_part_way():
    """A size whose child failed after its runs (the 200-model `pipeline status` ran out of
    memory) keeps what it measured: its runs in the table, '-' for the tools it did not reach,
    and a line naming the failure."""
    from harness.warehouse_cost import markdown

    run = {"wall_s": 7.5, "hooks_s": 1.0, "hooks": {"statements": 3, "spark_s": 0.5}, "models": 4,
           "models_with_0_statements": 0, "models_with_1_statement": 3}
    whole = {"domains": 1, "models_of_the_kind": 4, "twin": False,
             "runs": {"parse": {"wall_s": 2.0}, **{step: run for step in ("first run", "idle run", "one domain landed",
                                                                            "every domain landed")}},
             "tools": {tool: {"wall_s": 1.0, "exit": 0} for tool in ("status", "report", "restate --dry-run",
                                                                      "explain", "backfill --dry-run")}}
    partial = {**whole, "domains": 50, "models_of_the_kind": 200,
               "runs": {"parse": {"wall_s": 9.0}, "first run": {**run, "wall_s": 219.0}},
               "tools": {}, "failed": "java.lang.OutOfMemoryError: Java heap space"}
    text = markdown([whole, partial], "python -m harness.warehouse_cost", "abc1234")
    assert "| 4 | 2.0 | 7.5 | 7.5 | - | 7.5 | 7.5 |" in text
    assert "| 200 | 9.0 | 219.0 | - | - | - | - | - | - | - |" in text
    assert "| 200 | - | - | - | - | - |" in text
    assert "- 200 failed after what is shown: java.lang.OutOfMemoryError: Java heap space" in text
