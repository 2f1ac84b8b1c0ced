"""What a model of the kind refuses by name, in a team's project (generated: one fact per case,
each the rides fact's select declared as a team declares it):
- dbt's `grants` config (issue 79: the materialization ignored it, where dbt-spark's incremental
  applies it). Open-source Spark SQL parses no GRANT, so on this engine a model with grants is
  refused before anything is written; a project on an engine that grants says so (var
  grants_supported) and they are applied after the run, as dbt-spark applies them (here Spark
  then refuses the statement, which shows it was sent).
- a declared event date that is not a DATE (issue 80: a team's timestamp passed every run and
  failed only `pipeline restate`, after it printed its plan).
- a fact over landed sources only whose select returns no `is_deleted` (issue 80: a model over
  models need not, and the error Spark gave a fact that forgot it named no model)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from harness.generated_project import write_project
from helpers import Warehouse, driver, last_invocation_statements, trip
from pipeline import iceberg
from pipeline.dbt import Dbt, DbtError

pytestmark = pytest.mark.beside  # a build of its own (a generated project)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Fact 1 with grants; fact 2 with its event date (trip_date) a timestamp, no contract; fact 3
    with no is_deleted in its select."""
    dest = tmp_path_factory.mktemp("refusals") / "project"
    names = write_project(dest, 3)
    yml = dest / "models" / "marts" / "generated" / "_generated__models.yml"
    declared = yaml.safe_load(yml.read_text())
    declared["models"][0]["config"]["grants"] = {"select": ["analyst"]}
    declared["models"][1]["config"]["contract"] = {"enforced": False}
    yml.write_text(yaml.safe_dump(declared, sort_keys=False))
    sql = dest / "models" / "marts" / "generated" / f"{names[1]}.sql"
    sql.write_text(sql.read_text().replace("    trip_date,\n", "    cast(trip_date as timestamp) as trip_date,\n", 1))
    assert "as timestamp) as trip_date" in sql.read_text()
    sql = dest / "models" / "marts" / "generated" / f"{names[2]}.sql"
    flagged = "as updated_at,\n        is_deleted\n"
    assert flagged in sql.read_text(), "the template fact's select moved"
    sql.write_text(sql.read_text().replace(flagged, "as updated_at\n"))
    return dest, names


def land(spark, dbt, files: Path) -> Warehouse:
    wh = Warehouse.empty(spark, dbt, files)
    wh.land(drivers=[driver(7, "2024-12-01 00:00", rate="0.2000")], trips=[trip(1, "2025-01-02 10:00")])
    return wh


def refusal(team: Dbt, name: str) -> str:
    """The one failure of a run of generated fact `name` and its upstream, which must fail as
    the fact's error, naming the model and its file."""
    with pytest.raises(DbtError) as refused:
        team.invoke("run", "--select", f"+{name}")
    [failure] = refused.value.failures
    assert failure.startswith(f"{name}: error") and f"model {name} (models/marts/generated/{name}.sql)" in failure
    return failure


def test_grants_are_refused_by_name_before_a_write_and_applied_after_the_run_where_the_engine_grants(
        spark, dbt, project, tmp_path: Path):
    dest, [name, _, _] = project
    land(spark, dbt, tmp_path)
    team = Dbt(quiet=True, project_dir=dest)

    failure = refusal(team, name)
    assert "config grants {'select': ['analyst']} cannot be applied" in failure and "grants_supported" in failure
    assert not iceberg.table_exists(spark, f"marts.{name}")  # nothing written

    with pytest.raises(DbtError) as sent:
        team.invoke("run", "--select", name, "--vars", '{"grants_supported": true}')
    assert "GRANT" in str(sent.value).upper(), sent.value
    assert iceberg.table_exists(spark, f"marts.{name}")  # the run wrote, then applied its grants
    sent_grants = {g for s in last_invocation_statements() for g in re.findall(r"grant \w+ on \S+ to `\w+`", s)}
    assert sent_grants == {f"grant select on marts.{name} to `analyst`"}, sent_grants


def test_an_event_date_that_is_not_a_date_is_refused_by_name_and_no_table_is_kept(spark, dbt, project, tmp_path: Path):
    dest, [_, name, _] = project
    land(spark, dbt, tmp_path)
    team = Dbt(quiet=True, project_dir=dest)
    for _ in range(2):  # and again on the next run: nothing was kept to run incrementally
        failure = refusal(team, name)
        assert "event_date 'trip_date' is a timestamp column; it must be a DATE" in failure, failure
        assert not iceberg.table_exists(spark, f"marts.{name}")


def test_a_fact_over_landed_sources_whose_select_flags_no_deletes_is_refused_by_name(spark, dbt, project,
                                                                                    tmp_path: Path):
    """Its run reads the rows updated since its watermark, not a set of keys, so a key its select
    no longer returns cannot be taken as deleted: the run fails naming the model, its file and
    the column, as soon as a row is read (missing_flag_error), and writes no row."""
    dest, [_, _, name] = project
    land(spark, dbt, tmp_path)
    team = Dbt(quiet=True, project_dir=dest)
    failure = refusal(team, name)
    assert (f"model {name} (models/marts/generated/{name}.sql): its select returns no is_deleted column. "
            "A model of the kind over landed sources only flags its deleted rows itself") in failure, failure
    assert not iceberg.table_exists(spark, f"marts.{name}") or not spark.table(f"marts.{name}").count()
