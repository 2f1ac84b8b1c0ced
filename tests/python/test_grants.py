"""dbt's `grants` config on a model of the kind (issue 79: the materialization ignored it, where
dbt-spark's incremental applies it). Open-source Spark SQL parses no GRANT, so on this engine a
model with grants is refused by name before anything is written; a project on an engine that
grants says so (var grants_supported) and they are applied after the run, as dbt-spark applies
them (here Spark then refuses the statement, which shows it was sent)."""

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


def test_grants_are_refused_by_name_before_a_write_and_applied_after_the_run_where_the_engine_grants(
        spark, dbt, tmp_path: Path):
    dest = tmp_path / "project"
    [name] = write_project(dest, 1)
    yml = dest / "models" / "marts" / "generated" / "_generated__models.yml"
    declared = yaml.safe_load(yml.read_text())
    declared["models"][0]["config"]["grants"] = {"select": ["analyst"]}
    yml.write_text(yaml.safe_dump(declared, sort_keys=False))
    wh = Warehouse.empty(spark, dbt, tmp_path / "files")
    wh.land(drivers=[driver(7, "2024-12-01 00:00", rate="0.2000")], trips=[trip(1, "2025-01-02 10:00")])
    team = Dbt(quiet=True, project_dir=dest)

    with pytest.raises(DbtError) as refused:
        team.invoke("run", "--select", f"+{name}")
    [failure] = refused.value.failures
    assert failure.startswith(f"{name}: error") and f"model {name} (models/marts/generated/{name}.sql)" in failure
    assert "config grants {'select': ['analyst']} cannot be applied" in failure and "grants_supported" in failure
    assert not iceberg.table_exists(spark, f"marts.{name}")  # nothing written

    with pytest.raises(DbtError) as sent:
        team.invoke("run", "--select", name, "--vars", '{"grants_supported": true}')
    assert "GRANT" in str(sent.value).upper(), sent.value
    assert iceberg.table_exists(spark, f"marts.{name}")  # the run wrote, then applied its grants
    sent_grants = {g for s in last_invocation_statements() for g in re.findall(r"grant \w+ on \S+ to `\w+`", s)}
    assert sent_grants == {f"grant select on marts.{name} to `analyst`"}, sent_grants
