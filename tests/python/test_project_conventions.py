"""The project's own conventions, checked without Spark: contract, documentation, layout."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest
import yaml

from pipeline.paths import PROJECT_DIR

pytestmark = pytest.mark.fast


def _yml(path: str) -> dict:
    return yaml.safe_load((PROJECT_DIR / path).read_text())


def test_every_model_is_documented_in_its_folder_yml():
    for sql in (PROJECT_DIR / "models").rglob("*.sql"):
        ymls = list(sql.parent.glob("_*.yml"))
        documented = {m["name"]: m for y in ymls for m in (yaml.safe_load(y.read_text()).get("models") or [])}
        assert sql.stem in documented, f"{sql} has no entry in {sql.parent}/_*.yml"
        assert documented[sql.stem].get("description"), sql.stem


def test_every_macro_is_documented_and_named_after_its_file():
    for sql in (PROJECT_DIR / "macros").rglob("*.sql"):
        text = sql.read_text()
        materialization = re.search(rf"materialization {sql.stem}, adapter='(\w+)'", text)
        assert f"macro {sql.stem}(" in text or f"test {sql.stem}(" in text or materialization, \
            f"{sql}: macro name != file name"
        ymls = list(sql.parent.glob("_*.yml"))
        documented = {m["name"] for y in ymls for m in (yaml.safe_load(y.read_text()).get("macros") or [])}
        # dbt documents a generic test `x` as the macro `test_x`, a materialization `x` for an
        # adapter `a` as `materialization_x_a`
        names = {sql.stem, f"test_{sql.stem}"} | (
            {f"materialization_{sql.stem}_{materialization.group(1)}"} if materialization else set())
        assert names & documented, f"{sql.stem} undocumented in {sql.parent}"


def test_every_primary_key_is_tested_unique_and_not_null():
    for yml in (PROJECT_DIR / "models" / "marts").glob("_*.yml"):
        for model in yaml.safe_load(yml.read_text())["models"]:
            sql = (yml.parent / f"{model['name']}.sql").read_text()
            key = sql.split("unique_key='")[1].split("'")[0]
            [column] = [c for c in model["columns"] if c["name"] == key]
            assert {"unique", "not_null"} <= set(column.get("data_tests", [])), model["name"]


SECRET_FIELDS = {"password", "token", "kerberos_service_name", "user", "auth", "host", "port"}


def test_profile_credentials_come_only_from_environment_variables():
    """Every credential-like field of every target is an env_var() call: no secret in the repo."""
    outputs = _yml("profiles/profiles.yml")["backfill_safe"]["outputs"]
    assert "cluster" in outputs and "embedded" in outputs
    for name, output in outputs.items():
        for field in SECRET_FIELDS & set(output):
            if output.get("method") == "session" and field == "host":
                continue  # the session method's placeholder host (NA)
            value = str(output[field])
            assert value.startswith("{{") and "env_var(" in value, f"profiles.yml target {name}: {field} = {value!r}"


def test_the_project_parses_and_its_landing_contract_holds():
    """`dbt parse` of the project as it is now (no Spark), and the contract its sources declare."""
    import json

    from pipeline import contract, paths
    from pipeline.dbt import parse_project

    parse_project()
    manifest = json.loads((paths.target_dir() / "manifest.json").read_text())
    assert contract.Contract.from_manifest(manifest).tables


# The names every landed table and incremental model shares by the framework's own contract
# (landing_contract, merge_source, guarded_merge_sql), the run records' `status`, and the interval
# columns of a type-2 version (effective_interval): not an example's.
FRAMEWORK_NAMES = {"updated_at", "is_deleted", "_loaded_at", "_source_file", "status",
                   "valid_from", "valid_to", "is_current"}


def _example_names() -> dict[str, str]:
    """Every name an example owns: its sources, raw tables and their columns, its models and
    their documented columns (name -> where it is declared), less the framework's own names."""
    names: dict[str, str] = {}
    for yml in (PROJECT_DIR / "models").rglob("_*.yml"):
        if yml.parent.name in ("audit", "bench"):
            continue  # the framework's own views; the benchmark's baselines of the shop
        doc = yaml.safe_load(yml.read_text()) or {}
        for src in doc.get("sources") or []:
            names[src["name"]] = str(yml)
            for table in src.get("tables") or []:
                names[table["name"]] = str(yml)
                names.update({c["name"]: str(yml) for c in table.get("columns") or []})
        for model in doc.get("models") or []:
            names[model["name"]] = str(yml)
            names.update({c["name"]: str(yml) for c in model.get("columns") or []})
    return {name: where for name, where in names.items() if name not in FRAMEWORK_NAMES}


def _code(sql: str) -> str:
    """A macro file's code: Jinja and SQL comments left out (they may cite an example's
    measurements; the code may not name its tables or columns)."""
    import re

    without_jinja = re.sub(r"\{#.*?#\}", " ", sql, flags=re.S)
    return re.sub(r"--[^\n]*", " ", without_jinja)


def test_the_framework_macros_name_no_example_table_or_column():
    import re

    names = _example_names()
    assert {"shop", "orders", "order_id", "fct_order_item", "ordered_at"} <= set(names), names
    found = []
    for sql in sorted((PROJECT_DIR / "macros").rglob("*.sql")):
        if "examples" in sql.relative_to(PROJECT_DIR / "macros").parts:
            continue
        code = _code(sql.read_text())
        for word in sorted(set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code)) & set(names)):
            found.append(f"{sql.relative_to(PROJECT_DIR)} names {word!r} (declared in {names[word]})")
    assert not found, "\n".join(found)


# The run's mode is asked of one macro (run_mode, issue 79): the vars that set it are read, and
# their readers called, only there and in the two helpers it calls.
RUN_MODE_QUESTIONS = (r"backfill_safe\.backfill_window\(", r"backfill_safe\.explaining\(",
                      r"\bvar\(\s*['\"](?:backfill_start|backfill_end|explain_next_run|dual_run_model)['\"]")
RUN_MODE_HOMES = {"macros/materializations/run_mode.sql", "macros/incremental/backfill_window.sql",
                  "macros/incremental/explaining.sql"}


def test_the_runs_mode_is_asked_of_run_mode_only():
    import re

    found = []
    for folder in ("macros", "models", "tests/dbt"):
        for sql in sorted((PROJECT_DIR / folder).rglob("*.sql")):
            where = str(sql.relative_to(PROJECT_DIR))
            if where in RUN_MODE_HOMES:
                continue
            code = _code(sql.read_text())
            found += [f"{where}: {m.group(0)}" for pattern in RUN_MODE_QUESTIONS
                      for m in re.finditer(pattern, code)]
    assert not found, "ask backfill_safe.run_mode() instead:\n" + "\n".join(found)


# A model's run is decided once, by run_plan (issue 79): its declaration read and checked, full
# build or incremental, the invocation's mode, the watermark and the bounds. The steps of the kind
# (the materialization's folder, the incremental macros, the watermark's advance) read the plan;
# none reads the model's config meta, asks the mode or the table's state, or re-parses the
# declaration itself.
RUN_PLAN_HOME = "macros/materializations/run_plan.sql"
KIND_STEPS = ("macros/materializations", "macros/incremental", "macros/control/advance_watermark.sql")
PLAN_QUESTIONS = {
    "the model's config meta": r"\bconfig\.get\(\s*['\"]meta['\"]|\bmodel\.config\.meta\b",
    "the invocation's mode": r"backfill_safe\.run_mode\(",
    "the declaration": r"backfill_safe\.declared_model\(",
    "full build or incremental": r"\bshould_full_refresh\(|\bis_incremental\(|\bload_relation\(|"
                                 r"adapter\.get_relation\(\s*this\b",
    "the lookback's days": r"backfill_safe\.lookback_days\(",
}
# where a question is asked outside the plan, and why: run_mode.sql answers the mode;
# lookback_days.sql defines the rule's days; incremental_lower_bound.sql resolves a domain a
# team's plain model names (a model of the kind reads its plan's bound).
PLAN_QUESTION_EXCEPTIONS = {
    ("macros/materializations/run_mode.sql", "the invocation's mode"),
    ("macros/incremental/lookback_days.sql", "the lookback's days"),
    ("macros/incremental/incremental_lower_bound.sql", "the lookback's days"),
}
# the questions' old homes, removed: nothing calls them
RETIRED_QUESTIONS = ("scope_of_model", "is_incremental_run", "model_meta", "is_reference_table")


def test_a_models_run_is_decided_once_by_run_plan_and_its_steps_read_the_plan():
    import re

    found = []
    for folder in ("macros", "models", "tests/dbt", "tests/consumer_project"):
        for sql in sorted((PROJECT_DIR / folder).rglob("*.sql")):
            where = str(sql.relative_to(PROJECT_DIR))
            if "dbt_packages" in sql.parts or "target" in sql.parts:
                continue
            code = _code(sql.read_text())
            found += [f"{where}: {m.group(0)} (retired)" for name in RETIRED_QUESTIONS
                      for m in re.finditer(rf"\b{name}\(", code)]
            if where == RUN_PLAN_HOME:
                continue
            # the model's own meta, nowhere in the framework; the other questions, in its steps
            found += [f"{where}: {m.group(0)} ({question}: read run_plan())"
                      for question, pattern in PLAN_QUESTIONS.items()
                      if (where, question) not in PLAN_QUESTION_EXCEPTIONS
                      and (where.startswith(KIND_STEPS)
                           or (question == "the model's config meta" and folder == "macros"))
                      for m in re.finditer(pattern, code)]
    assert not found, "\n".join(found)


def test_loadable_has_one_definition_that_the_staging_the_audit_and_the_watermark_share():
    """The row rules (quarantine_reason) are applied only inside screened_versions, which adds the
    conflicting-versions rule: the staging, the quarantine audit, the watermark's advance and its
    drift check all read that one verdict (through landed_versions or staged_versions), so a rule
    added there reaches them all. Before, the watermark applied the row rules alone and moved to
    the update time of versions quarantined as conflicting (issue 48)."""
    callers = {}
    for folder in ("macros", "models", "tests/dbt"):
        for sql in sorted((PROJECT_DIR / folder).rglob("*.sql")):
            code = _code(sql.read_text())
            for name in ("quarantine_reason", "screened_versions", "landed_versions"):
                if re.search(rf"\b{name}\(", code) and not re.search(rf"macro {name}\(", code):
                    callers.setdefault(name, set()).add(sql.stem)
    assert callers["quarantine_reason"] == {"screened_versions"}, callers
    assert callers["screened_versions"] == {"landed_versions", "staged_versions",
                                            "landed_rows_are_loaded_or_quarantined"}, callers
    assert {"advance_watermark", "watermark_drift", "quarantine_view_tree"} <= callers["landed_versions"], callers


def _code_blocks(markdown: str) -> list[tuple[str, str]]:
    """(first line, rest) of every fenced code block of a markdown text."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", markdown, re.S | re.M)
    return [tuple(block.rstrip("\n").split("\n", 1)) for block in blocks if "\n" in block.rstrip("\n")]


def test_a_teams_profile_sets_the_frameworks_spark_settings_with_the_installed_jars():
    """The team's profile of the adoption guide (tests/consumer_project/profiles.yml) sets every
    Spark setting of this repository's embedded target, to the same values, but the jars: it
    names them in the installed package, through dbt_packages/ (relative to the project), and reads
    no environment variable but the state folder's (whose default is the project's .warehouse)."""
    import jinja2

    def embedded(path: Path, profile: str) -> dict:
        def env_var(name: str, default: str | None = None) -> str:
            assert name == "PIPELINE_STATE_DIR" or profile == "backfill_safe", f"{path}: env_var({name!r})"
            return default

        text = jinja2.Environment().from_string(path.read_text()).render(env_var=env_var)
        return yaml.safe_load(text)[profile]["outputs"]["embedded"]

    ours = embedded(PROJECT_DIR / "profiles" / "profiles.yml", "backfill_safe")
    teams = embedded(PROJECT_DIR / "tests" / "consumer_project" / "profiles.yml", "helpdesk_analytics")
    jars = {"spark.jars", "spark.driver.extraClassPath"}
    spark, their_spark = ours.pop("server_side_parameters"), teams.pop("server_side_parameters")
    assert teams == ours
    assert {k: str(v) for k, v in their_spark.items() if k not in jars} == {
        k: str(v) for k, v in spark.items() if k not in jars}
    assert their_spark["spark.jars"] == "dbt_packages/backfill_safe/jars/iceberg-spark-runtime.jar"
    assert their_spark["spark.driver.extraClassPath"].split(":") == [
        "dbt_packages/backfill_safe/jars/backfill-safe-jvm.jar", their_spark["spark.jars"]]
    assert [Path(p).name for p in spark["spark.driver.extraClassPath"].split(":")] == [
        "backfill-safe-jvm.jar", "iceberg-spark-runtime.jar"]


def test_the_guide_shows_the_example_files_as_they_are():
    """A guide's block whose first line is a path comment is that whole file; one marked
    `(excerpt)` is a verbatim part of it. The example's tests build those files, so the guide's
    example builds."""
    checked = []
    for guide in ("add-a-source-and-a-model.md", "adopt-the-framework.md"):
        checked += _checked_blocks((PROJECT_DIR / "docs" / "guides" / guide).read_text())
    assert len(checked) >= 10, checked  # sources, staging, current state, fact and yml; the consumer's


def _checked_blocks(guide: str) -> list[str]:
    checked = []
    for first, body in _code_blocks(guide):
        named = re.fullmatch(r"(?:--|#) ((?:models|macros|tests)/\S+)( \(excerpt\))?", first)
        if not named:
            continue
        path, excerpt = PROJECT_DIR / named.group(1), named.group(2)
        assert path.exists(), f"the guide shows {named.group(1)}, which does not exist"
        text = path.read_text().rstrip("\n")
        if excerpt:
            assert body in text, f"the guide's excerpt of {named.group(1)} is not a verbatim part of it"
        else:
            assert body == text, f"the guide's {named.group(1)} differs from the file"
        checked.append(named.group(1))
    return checked


def test_every_test_the_docs_cite_exists():
    """A test name quoted in the README or docs/ is a test function of tests/python: a renamed or
    removed test cannot leave the docs citing it."""
    defined = {name for path in (PROJECT_DIR / "tests" / "python").glob("*.py")
               for name in re.findall(r"^def (test_\w+)\(", path.read_text(), re.M)}
    missing = []
    for doc in [PROJECT_DIR / "README.md", *(PROJECT_DIR / "docs").rglob("*.md")]:
        for name in set(re.findall(r"`(test_\w+)`", doc.read_text())):
            if name not in defined:
                missing.append(f"{doc.relative_to(PROJECT_DIR)} cites {name}")
    assert not missing, "\n".join(sorted(missing))




def test_the_second_example_is_new_files_only():
    """The rides example was added with new files only (its sources yml, models and their yml
    under models/*/rides/): no file of the framework or the project's configuration names it,
    its source, tables or models, so a team's own source and model need no edit there either
    (the lookback is the model's own, the audit view finds the declared models itself)."""
    own = [path for path in (PROJECT_DIR / "models").rglob("*") if path.is_file() and "rides" in path.parts]
    names = {"rides"} | {path.stem for path in own if path.suffix == ".sql"}
    for path in own:
        for source in (yaml.safe_load(path.read_text()) or {}).get("sources") or [] if path.suffix == ".yml" else []:
            names |= {table["name"] for table in source.get("tables") or []}
    assert {"rides", "trips", "drivers", "fct_trip", "dim_driver"} <= names, names
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, names))) + r")\b")
    framework = [PROJECT_DIR / "dbt_project.yml", PROJECT_DIR / "profiles" / "profiles.yml",
                 *(PROJECT_DIR / "macros").rglob("*.*"),
                 *(p for p in (PROJECT_DIR / "models").rglob("*.*") if "rides" not in p.parts),
                 *(PROJECT_DIR / "scripts" / "pipeline").rglob("*.py")]  # the product; harness/, sample/ apart
    named = [f"{path.relative_to(PROJECT_DIR)}:{number}: {line.strip()}"
             for path in framework for number, line in enumerate(path.read_text().splitlines(), 1)
             if pattern.search(line)]
    assert not named, "outside its own files, the project names the rides example:\n" + "\n".join(named)


def test_dbt_parse_prints_no_deprecation(tmp_path: Path):
    """dbt 1.11's conventions (generic test arguments under `arguments:`, ...): a full parse
    with every deprecation shown prints none."""
    import subprocess
    import sys

    from pipeline import paths

    paths.export_environment()
    done = subprocess.run(
        [str(Path(sys.executable).parent / "dbt"), "parse", "--no-partial-parse", "--show-all-deprecations",
         "--project-dir", str(PROJECT_DIR), "--profiles-dir", str(paths.PROFILES_DIR),
         "--target-path", str(tmp_path / "target"), "--log-path", str(tmp_path / "logs")],
        capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "deprecat" not in (done.stdout + done.stderr).lower(), done.stdout[-3000:]


def test_the_selectors_name_the_sets_the_tooling_uses():
    """selectors.yml: `framework_models` is exactly the models `pipeline backfill` restates by
    default (the framework's kind: materialized backfill_safe, in a team's project too); the two examples' sets split the project's models between them, sharing
    only what both read."""
    from dbt.cli.main import dbtRunner

    from pipeline import manifest, paths

    paths.export_environment()
    runner = dbtRunner()

    def listed(*selection: str) -> dict[str, str]:
        result = runner.invoke(["-q", "ls", *selection, "--resource-type", "model", "--output", "json",
                                "--project-dir", str(PROJECT_DIR), "--profiles-dir", str(paths.PROFILES_DIR)])
        assert result.success, result.exception
        return {n["name"]: n["original_file_path"] for n in map(json.loads, result.result)}

    framework = listed("--selector", "framework_models")
    assert set(framework) == {m.name for m in manifest.incremental_models()}
    # each example mart promises its columns and types (an enforced contract) and fails a run
    # whose select drifted from its table (on_schema_change: fail)
    nodes = [n for n in json.loads((paths.target_dir() / "manifest.json").read_text())["nodes"].values()
             if n["resource_type"] == "model" and n["name"] in framework]
    assert len(nodes) == len(framework), nodes
    for node in nodes:
        assert node["config"]["contract"]["enforced"], node["name"]
        assert node["config"]["on_schema_change"] == "fail", node["name"]
        assert all(c.get("data_type") for c in node["columns"].values()), node["name"]
    assert {"fct_order_item", "dim_customer", "fct_trip", "dim_driver"} <= set(framework)
    shop, rides = listed("--selector", "shop_example"), listed("--selector", "rides_example")
    assert not [path for path in shop.values() if "/rides/" in path], shop
    assert {"fct_trip", "dim_driver", "stg_rides__trips"} <= set(rides)
    assert set(shop) & set(rides) == {"dim_date"}
    # the tests' SHOP_ONLY (an --exclude, to combine with a --select) is the same set
    from domains import SHOP_ONLY

    assert listed(*SHOP_ONLY) == shop


def test_framework_macros_call_each_other_by_package_name():
    """Installed as a package, a framework macro runs in the context of the team's model, where
    an unqualified name finds only that project's macros: every call of a framework macro
    inside the framework is written `backfill_safe.name(` (jinja_calls)."""
    from jinja_calls import defined_macros, unqualified_calls

    files = [p for p in sorted((PROJECT_DIR / "macros").rglob("*.sql"))
             if "examples" not in p.relative_to(PROJECT_DIR / "macros").parts]
    names = defined_macros(files)
    assert {"merge_source", "guarded_merge_sql", "advance_watermark"} <= names
    found = [f"{f.relative_to(PROJECT_DIR)}: {name}(" for f in files
             for _, name in unqualified_calls(f.read_text(), names)]
    assert not found, "\n".join(found)
    # the scanner sees a call in code, and not in a string or a comment
    assert unqualified_calls("{{ merge_source('live') }}", names) == [(3, "merge_source")]
    assert unqualified_calls("{# merge_source() #}{{ x('merge_source()') }}", names) == []


def test_every_command_states_its_exit_codes_in_its_help_as_the_reference_does():
    """Each `pipeline` command's --help ends with its exit codes, and they are the codes
    docs/reference/cli.md gives for it: a code added on one side only fails here. Every option
    and every command (the cluster's too) says what it is for in its --help."""
    import click

    from pipeline.cli import EXIT_CODES, pipeline

    def codes(text: str) -> set[str]:
        return set(re.findall(r"(?:^|: |; |, )([0-9])\b", text))

    def helped(command: click.Command, *names: str) -> str:
        root = click.Context(pipeline, info_name="pipeline")
        context = click.Context(command, info_name=" ".join(names), parent=root)
        return " ".join(command.get_help(context).split())

    assert set(pipeline.commands) == set(EXIT_CODES)
    reference = (PROJECT_DIR / "docs" / "reference" / "cli.md").read_text()
    documented = {}
    for section in re.split(r"^## `pipeline ", reference, flags=re.M)[1:]:
        name = re.match(r"[a-z-]+", section).group(0)
        stated = re.search(r"Exit: (.*?)(?:\n\n|\Z)", section, re.S)
        documented[name] = codes(stated.group(1)) if stated else set()
    for name, command in pipeline.commands.items():
        assert f"Exit codes: {EXIT_CODES[name]}." in helped(command, name), name
        assert codes(EXIT_CODES[name]) == documented.get(name), (name, EXIT_CODES[name], documented.get(name))
    everything = [(name, c) for name, c in pipeline.commands.items()]
    everything += [(f"cluster {name}", c) for name, c in pipeline.commands["cluster"].commands.items()]
    for name, command in everything:
        assert command.help and command.short_help, f"pipeline {name} has no help"
        assert "Exit codes: " in (command.epilog or ""), f"pipeline {name} states no exit codes"
        if name.startswith("cluster "):  # each subcommand's codes are among the group's
            assert codes(command.epilog.split("Exit codes: ")[1]) <= codes(EXIT_CODES["cluster"]), name
        undocumented = [p.name for p in command.params if isinstance(p, click.Option) and not p.help]
        assert not undocumented, f"pipeline {name}: options without help: {undocumented}"


def test_the_command_line_refuses_a_bad_value_with_usage_and_exit_2(capsys, monkeypatch):
    """click refuses a value of the wrong type or a missing argument before any command runs:
    exit 2, the usage and the argument named on stderr, nothing on stdout."""
    from pipeline.cli import EXIT_CODES, main

    assert main(["backfill", "--batch-days", "seven"]) == 2
    captured = capsys.readouterr()
    assert "Invalid value for '--batch-days'" in captured.err and "Usage: pipeline backfill" in captured.err
    assert captured.out == ""
    assert main(["land"]) == 2
    assert "Missing argument 'FILES...'" in capsys.readouterr().err
    assert main(["cluster", "restart"]) == 2
    assert "No such command 'restart'" in capsys.readouterr().err
    # a value in range is the command's own check, still before Spark starts
    import pipeline.engine

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was asked for before the command line was checked")

    monkeypatch.setattr(pipeline.engine, "get_engine", no_spark)
    assert main(["report", "--days", "0"]) == 2
    assert capsys.readouterr().out.startswith("refused: --days must be 1..366")
    assert main(["--help"]) == 0
    listed = capsys.readouterr().out.split("Commands:")[1]
    assert all(re.search(rf"^  {name} ", listed, re.M) for name in EXIT_CODES), listed


def test_a_command_outside_a_dbt_project_is_refused_naming_the_folder(tmp_path: Path):
    """`pipeline` works on the dbt project of DBT_PROJECT_DIR (installed: of its working folder):
    where there is none, a command is refused with exit 2 naming the folder, before Spark or dbt
    start; --help, package-dir and dags-dir work anywhere."""
    import os
    import subprocess
    import sys

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "pipeline.cli", *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "DBT_PROJECT_DIR": str(tmp_path)})

    refused = run("report")
    assert refused.returncode == 2 and refused.stdout == "", refused
    assert refused.stderr.strip() == (f"error: no dbt_project.yml in {tmp_path.resolve()}: run pipeline from your "
                                      "dbt project's folder, or set DBT_PROJECT_DIR to it")
    assert run("report", "--help").returncode == 0
    printed = run("package-dir")
    assert printed.returncode == 0 and Path(printed.stdout.strip()) == PROJECT_DIR
    dags = run("dags-dir")
    assert dags.returncode == 0 and Path(dags.stdout.strip()) == PROJECT_DIR / "scripts" / "pipeline" / "dags"


def test_the_installed_package_imports_no_harness():
    """The benchmarks and the fault-injection harness (scripts/harness/), the example's sample and
    main job (scripts/sample/) import the product; the product (the `pipeline` package pyproject
    installs) never imports them."""
    importing = [f"{path.relative_to(PROJECT_DIR)}:{number}: {line.strip()}"
                 for path in (PROJECT_DIR / "scripts" / "pipeline").rglob("*.py")
                 for number, line in enumerate(path.read_text().splitlines(), 1)
                 if re.match(r"\s*(from|import)\s+(harness|sample)\b", line)]
    assert not importing, "\n".join(importing)
    installed = tomllib.loads((PROJECT_DIR / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert not [p for p in installed if not p.startswith("pipeline")], installed


# the calls a model of the kind may make besides ref/source/config/var: docs/reference/configuration.md,
# "Calls a model's select may make"
PUBLIC_CALLS = {"landed_since_last_run", "scope_keys", "date_var", "surrogate_key", "unknown_member_key",
                "version_in_effect_order"}


def test_a_model_of_the_kind_calls_no_framework_macro_but_the_public_ones():
    """A model file of the kind is config plus its business select: the only framework macros it
    may call are the documented public ones (the examples' own macros, macros/examples, aside):
    no plumbing (scope caches, the MERGE's source, hooks) in a model body."""
    import re

    from jinja_calls import _code_spans, defined_macros

    framework = defined_macros([p for p in sorted((PROJECT_DIR / "macros").rglob("*.sql"))
                                if "examples" not in p.relative_to(PROJECT_DIR / "macros").parts])
    assert PUBLIC_CALLS <= framework
    call = re.compile(r"(?<![\w.])(?:backfill_safe\.)?([A-Za-z_][A-Za-z0-9_]*)\s*\(")
    models = [p for root in (PROJECT_DIR / "models", PROJECT_DIR / "tests" / "consumer_project" / "models")
              for p in sorted(root.rglob("*.sql")) if "materialized='backfill_safe'" in p.read_text()]
    assert len(models) >= 9, models
    texts = {p: p.read_text() for p in models if "half_declared" not in p.name}
    found = [f"{p.relative_to(PROJECT_DIR)}: {name}("
             for p, text in texts.items() for start, end in _code_spans(text)
             for name in call.findall(text, start, end) if name in framework - PUBLIC_CALLS]
    assert not found, "model files of the kind calling the framework's plumbing:\n" + "\n".join(found)
