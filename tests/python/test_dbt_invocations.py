"""dbt in process (pipeline.dbt.Dbt): what consecutive invocations of one process cost dbt."""

from __future__ import annotations

from pipeline.dbt import PARSE_STATES_KEPT, PARTIAL_PARSE_FILE
from pipeline import paths


def test_an_invocation_with_the_vars_of_an_earlier_one_is_not_parsed_again_in_full(dbt):
    """dbt keeps one saved parse state and parses the whole project again whenever --vars differ
    from the state's (6.5 s here): the tests and the runner alternate runs with and without vars.
    Dbt keeps a state per set of vars, so only the first invocation with new vars parses it all."""
    full_parses: list[str] = []

    def catch(event) -> None:
        if event.info.name == "UnableToPartialParse":
            full_parses.append(event.data.reason)

    runner = dbt._runner
    callbacks = runner.callbacks
    runner.callbacks = [*(callbacks or []), catch]
    spine = ("--vars", "{date_spine_end: '2031-12-31'}")  # vars no other test passes
    try:
        dbt.ls("--select", "dim_date")
        dbt.ls("--select", "dim_date", *spine)
        assert full_parses, "new vars: dbt parses the project in full"
        full_parses.clear()
        for _ in range(2):
            dbt.ls("--select", "dim_date")
            dbt.ls("--select", "dim_date", *spine)
        assert full_parses == []
    finally:
        runner.callbacks = callbacks
    states = list((paths.target_dir() / "partial_parse").glob("*.msgpack"))
    assert 2 <= len(states) <= PARSE_STATES_KEPT
    assert (paths.target_dir() / PARTIAL_PARSE_FILE).exists()  # dbt's own file, where dbt reads it
