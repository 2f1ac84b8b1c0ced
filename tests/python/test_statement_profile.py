"""The test-suite profiler's report (scripts/harness/statement_profile.py) adds up what it read."""

from __future__ import annotations

import json

import pytest

from harness.statement_profile import report

pytestmark = pytest.mark.fast


def test_the_profile_report_splits_each_phase_into_dbt_spark_and_subprocess_time(tmp_path):
    test = "tests/python/test_a.py::test_one"
    lines = [
        {"test": test, "phase": "call", "kind": "sql", "seconds": 2.0, "in_dbt": True, "what": "merge into marts.t"},
        {"test": test, "phase": "call", "kind": "collect", "seconds": 1.0, "in_dbt": True, "what": ""},
        {"test": test, "phase": "call", "kind": "dbt", "seconds": 4.0, "in_dbt": False, "what": "invoke run"},
        {"test": test, "phase": "call", "kind": "sql", "seconds": 0.5, "in_dbt": False, "what": "select 1"},
        {"test": test, "phase": "call", "kind": "subprocess", "seconds": 3.0, "in_dbt": False, "what": "dbt seed"},
        {"test": test, "phase": "call", "kind": "phase", "seconds": 8.0, "in_dbt": False, "what": "call"},
        {"test": "tests/python/test_b.py::test_two", "phase": "setup", "kind": "phase", "seconds": 5.0,
         "in_dbt": False, "what": "setup"},
    ]
    profile = tmp_path / "profile.jsonl"
    profile.write_text("".join(json.dumps(line) + "\n" for line in lines))

    text = report(str(profile))
    assert text.splitlines()[0] == ("13 s in 1 tests; dbt 4 s in 1 invocations (Spark 3 s, dbt's own 1 s);"
                                    " the tests' own Spark 0 s; subprocesses 3 s")
    assert "      8      1  tests/python/test_a.py" in text and "      5      0  tests/python/test_b.py" in text
    assert "      8      4 (  1)            3             0           3  call      " + test in text
    assert "    2.0      1  merge into marts.t" in text
    assert report(str(profile), test="test_b").splitlines()[0].startswith("5 s in 0 tests; dbt 0 s")
