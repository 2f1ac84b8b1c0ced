"""dbt's adapter tests for the materializations the framework's dispatched macros touch
(views: spark__create_view_as; data tests: spark__get_test_sql; the merge strategy is dbt-spark's
own, the framework's MERGE being its materialization's), on Iceberg tables, for models that are not of the framework's kind: they must keep dbt-spark's
semantics. The classes follow dbt-spark's own tests/functional/adapter, with Iceberg where
dbt-spark's use Delta (which its session profile skips).

Not here: BaseIncrementalUniqueKey. Its seed loader inserts dates as string literals, which
Spark 3.5 refuses to store in a date column (CANNOT_SAFELY_CAST; the LEGACY store assignment
that would allow it is refused for V2 tables); with the date loaded as text, 9 of its 10 cases
still differ from their expected tables, exactly as without the framework. dbt-spark skips the
class for its session profile. The merge semantics it covers are covered here by the
exclude-columns, predicates and on-schema-change classes (all unique_key MERGEs), and by
tests/python/test_plain_models.py.
Nor the snapshot tests. The framework overrides no snapshot macro, and on this stack
they fail the same with and without it (dbt-spark's snapshot refuses the table it created on
its second run: "in another format than 'delta' or 'iceberg' or 'hudi'"); dbt-spark skips
them for its session profile too. Run with the framework's dispatch removed, this module's
other classes pass as they do with it (checked by hand; the note of issue 28)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import BaseMergeExcludeColumns
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import BaseIncrementalOnSchemaChangeSetup
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.util import run_dbt, run_dbt_and_capture

ICEBERG = {"+file_format": "iceberg"}
MERGE = {**ICEBERG, "+incremental_strategy": "merge"}
PARQUET = {"+file_format": "parquet"}


class TestFrameworkMacrosAreDispatched:
    """The suite below proves something only if the framework's macros are the ones dbt calls."""

    @pytest.fixture(scope="class")
    def macros(self):
        return {"which_package.sql": """
{% macro which_package() %}
  {{ log('DISPATCHED get_merge_sql ' ~ adapter.dispatch('get_merge_sql', 'dbt').macro.package_name, info=True) }}
  {{ log('DISPATCHED create_view_as ' ~ adapter.dispatch('create_view_as', 'dbt').macro.package_name, info=True) }}
  {{ log('DISPATCHED get_test_sql ' ~ adapter.dispatch('get_test_sql', 'dbt').macro.package_name, info=True) }}
{% endmacro %}"""}

    def test_view_and_test_sql_come_from_the_framework_and_the_merge_from_dbt_spark(self, project):
        _, log = run_dbt_and_capture(["run-operation", "which_package"])
        for name in ("create_view_as", "get_test_sql"):
            assert f"DISPATCHED {name} backfill_safe" in log, log
        # the kind's MERGE is its materialization's: a plain merge model gets dbt-spark's own
        assert "DISPATCHED get_merge_sql " in log and "DISPATCHED get_merge_sql backfill_safe" not in log, log


class TestSimpleMaterializations(BaseSimpleMaterializations):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "base", "models": ICEBERG, "seeds": ICEBERG}


class TestSimpleMaterializationsParquet(BaseSimpleMaterializations):
    """The same on plain Parquet: the swappable model goes from table to view to incremental,
    each a drop and a create at the table's location (the rebuild case; Iceberg's session
    catalog left the folder behind and the create failed with LOCATION_ALREADY_EXISTS)."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "base_parquet", "models": PARQUET, "seeds": PARQUET}


class TestSingularTests(BaseSingularTests):
    pass


class TestGenericTests(BaseGenericTests):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "generic_tests", "models": ICEBERG, "seeds": ICEBERG}


class TestIncremental(BaseIncremental):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "incremental", "models": ICEBERG, "seeds": ICEBERG}


class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": MERGE}


PREDICATES_MODEL = """
{{ config(materialized = 'incremental', unique_key = 'id') }}
{% if not is_incremental() %}
select cast(1 as bigint) as id, 'hello' as msg, 'blue' as color
union all
select cast(2 as bigint) as id, 'goodbye' as msg, 'red' as color
{% else %}
-- merge will not happen on the above record where id = 2, so new record will fall to insert
select cast(1 as bigint) as id, 'hey' as msg, 'blue' as color
union all
select cast(2 as bigint) as id, 'yo' as msg, 'green' as color
union all
select cast(3 as bigint) as id, 'anyway' as msg, 'purple' as color
{% endif %}
"""


class TestIncrementalPredicatesMerge(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {**MERGE, "+incremental_predicates": ["dbt_internal_dest.id != 2"]}}

    @pytest.fixture(scope="class")
    def models(self):
        return {"delete_insert_incremental_predicates.sql": PREDICATES_MODEL}


class TestOnSchemaChangeMerge(BaseIncrementalOnSchemaChangeSetup):
    """ignore, fail and append_new_columns on Iceberg MERGE models (dbt-spark's Delta variant:
    removing columns is not supported by the format, so the sync cases are left out as there)."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {**MERGE, "+unique_key": "id"}}

    def test_run_incremental_ignore(self, project):
        self.run_twice_and_assert("model_a incremental_ignore incremental_ignore_target",
                                  "incremental_ignore", "incremental_ignore_target", project)

    def test_run_incremental_fail_on_schema_change(self, project):
        run_dbt(["run", "--models", "model_a incremental_fail", "--full-refresh"])
        results = run_dbt(["run", "--models", "model_a incremental_fail"], expect_pass=False)
        assert "Compilation Error" in results[1].message

    def test_run_incremental_append_new_columns(self, project):
        self.run_incremental_append_new_columns(project)


class TestFrameworkModelInAProjectWithoutLandedSources:
    """A team that just installed the package, before declaring any landed source: the
    framework's own model (audit_quarantined_rows) builds, empty, instead of failing the run."""

    @pytest.fixture(scope="class", autouse=True)
    def framework_models(self, framework_installed, project_root):
        from conftest import FRAMEWORK_DIR

        package = Path(project_root) / "dbt_packages" / "backfill_safe"
        # a copy: dbt does not follow a symlinked folder inside a project's model path
        shutil.copytree(FRAMEWORK_DIR / "models" / "audit", package / "models" / "audit")

    @pytest.fixture(scope="class")
    def models(self):
        return {"plain_model.sql": "select 1 as id"}

    def test_the_quarantine_view_builds_empty(self, project):
        results = run_dbt(["run"])
        assert sorted((r.node.name, str(r.status)) for r in results) == [
            ("audit_quarantined_rows", "success"), ("plain_model", "success")]
        [relation] = [r.node.relation_name for r in results if r.node.name == "audit_quarantined_rows"]
        assert project.run_sql(f"select count(*) from {relation}", fetch="one")[0] == 0
