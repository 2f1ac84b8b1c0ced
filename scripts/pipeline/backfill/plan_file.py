"""Backfill plans as code: a file a reviewer reads in a pull request, and `pipeline apply` runs exactly.

`pipeline backfill ... --plan-out FILE` and `pipeline restate ... --plan-out FILE` write a plan
(YAML): its kind and parameters, the reason, the scope (models, tables, windows; for a
restatement the late keys per model), the code it was planned on (git commit, each model's file
checksum from dbt's manifest, one hash of the project's and the framework's macros and of
dbt_project.yml), the data (each table's snapshot), the estimate (per window and model:
partitions, live rows, data files, bytes; for a restatement the cost of the missed window per
date) and the gates (the data tests run on the branches before publishing). Its `plan_hash`
covers everything else: a file edited after planning is refused.

`pipeline apply FILE` plans again from the file's parameters on the code and data of the moment
and compares: a different scope or different code is refused with the difference (`--replan`
writes the new plan over the file for another review instead); data that moved without changing
the scope is shown and applied. The run records the plan's hash (`pipeline status RUN_ID`).

Pure: no Spark, no dbt.
"""

from __future__ import annotations

import hashlib
import json
from datetime import date
from pathlib import Path

from pipeline.backfill.plan import PlanError, check_reason, parse_date, parse_selectors

PLAN_VERSION = 1
KINDS = ("backfill", "restate")
SECTIONS = ("plan_version", "kind", "reason", "planned_at", "parameters", "scope", "code", "data", "estimate", "gates")
HEADER = (
    "# A backfill plan (backfill_safe): review it, commit it, then run exactly it with\n"
    "#     pipeline apply {path}\n"
    "# Do not edit: plan_hash covers every field; plan again (or `pipeline apply --replan`) instead.\n"
)


def plan_hash(document: dict) -> str:
    """sha256 of the plan's fields but plan_hash, as canonical JSON."""
    body = {k: v for k, v in document.items() if k != "plan_hash"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def sealed(document: dict) -> dict:
    """The document with its plan_hash, fields in the order a reviewer reads them."""
    body = {k: document[k] for k in SECTIONS}
    return {**body, "plan_hash": plan_hash(body)}


def dump(document: dict, path: Path) -> str:
    """The plan as YAML with its header, written to `path` (through a temporary file: a reader
    never sees half a plan); returns the text."""
    import yaml  # dbt's own dependency

    text = HEADER.format(path=path) + yaml.safe_dump(
        sealed(document), sort_keys=False, width=110, default_flow_style=False, allow_unicode=True
    )
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    temporary.replace(path)
    return text


def load(path: Path) -> dict:
    """A plan file, parsed and checked: its fields, kind, version, parameters and hash. PlanError
    naming the file and the field otherwise."""
    return load_with_text(path)[0]


def load_with_text(path: Path) -> tuple[dict, str]:
    """load(), and the file's text as it was checked (what a run records)."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
        document = yaml.safe_load(text)
    except OSError as error:
        raise PlanError(f"{path}: cannot read the plan ({error.strerror or error})") from error
    except UnicodeDecodeError as error:
        raise PlanError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from error
    except yaml.YAMLError as error:
        raise PlanError(f"{path}: not a YAML plan ({error})") from error
    return _checked(document, path), text


def _checked(document: object, path: Path) -> dict:
    if not isinstance(document, dict):
        raise PlanError(f"{path}: not a plan (a mapping of {', '.join(SECTIONS)}, plan_hash)")
    missing = [k for k in (*SECTIONS, "plan_hash") if k not in document]
    if missing:
        raise PlanError(f"{path}: no field {missing[0]!r}: write plans with --plan-out")
    extra = sorted(set(document) - {*SECTIONS, "plan_hash"})
    if extra:
        raise PlanError(f"{path}: unknown field {extra[0]!r}")
    if document["plan_version"] != PLAN_VERSION:
        raise PlanError(f"{path}: plan_version {document['plan_version']!r}; this version reads {PLAN_VERSION}")
    if document["kind"] not in KINDS:
        raise PlanError(f"{path}: kind {document['kind']!r} is not one of {', '.join(KINDS)}")
    for name in ("reason", "planned_at", "plan_hash"):
        if not isinstance(document[name], str):
            raise PlanError(f"{path}: {name} must be text (quoted), got {document[name]!r}")
    try:
        sealed_with = plan_hash(document)
    except (TypeError, ValueError) as error:  # a value YAML read as a date, a key not text
        raise PlanError(
            f"{path}: a field holds a value no plan writes ({error}): the plan was edited after planning"
        ) from error
    if document["plan_hash"] != sealed_with:
        raise PlanError(
            f"{path}: plan_hash does not match its fields: the plan was edited after planning. "
            "Plan again (pipeline backfill|restate ... --plan-out) and have it reviewed"
        )
    try:
        check_reason(document["reason"])
    except PlanError as error:
        raise PlanError(f"{path}: reason: {error}") from error
    parameters(document, path)
    for section in ("scope", "code", "data", "estimate"):
        if not isinstance(document[section], dict):
            raise PlanError(f"{path}: {section} is not a mapping")
    scope, code = document["scope"], document["code"]
    if (
        not isinstance(scope.get("models"), list)
        or not scope["models"]
        or not all(isinstance(m, str) for m in scope["models"])
    ):
        raise PlanError(f"{path}: scope.models is not a list of models")
    if not isinstance(scope.get("windows"), list) or not scope["windows"]:
        raise PlanError(f"{path}: scope.windows is not a list of windows")
    if not isinstance(code.get("models"), dict) or not isinstance(document["gates"], list):
        raise PlanError(f"{path}: code.models is not a mapping or gates not a list")
    return document


def parameters(document: dict, path: Path | str = "plan") -> dict:
    """The plan's parameters, checked as the command line's are: for a backfill a range
    (start, end) or the windows of a replayed run, for both kinds the selection and batch_days."""
    given = document.get("parameters")
    if not isinstance(given, dict):
        raise PlanError(f"{path}: parameters is not a mapping")
    known = {"backfill": {"start", "end", "windows", "select", "batch_days"}, "restate": {"select", "batch_days"}}[
        document["kind"]
    ]
    unknown = sorted(set(given) - known)
    if unknown:
        raise PlanError(f"{path}: parameters.{unknown[0]} is not a parameter of a {document['kind']} plan")
    try:
        if given.get("select") is not None:
            if not isinstance(given["select"], str):
                raise PlanError(f"parameters.select must be text, got {given['select']!r}")
            parse_selectors(given["select"])
        if not isinstance(given.get("batch_days"), int):
            raise PlanError(f"parameters.batch_days must be a number of days, got {given.get('batch_days')!r}")
        if document["kind"] == "backfill":
            if given.get("windows") is not None:
                window_list(given["windows"])
                if given.get("start") is not None or given.get("end") is not None:
                    raise PlanError("give parameters.windows or parameters.start/end, not both")
            else:
                parse_date(given.get("start"), "parameters.start")  # type: ignore[arg-type]  # refuses None
                parse_date(given.get("end"), "parameters.end")  # type: ignore[arg-type]
    except PlanError as error:
        raise PlanError(f"{path}: {error}") from error
    return given


def window_list(windows: object) -> list[tuple[date, date]]:
    """A replayed run's windows ({start, end} each, end exclusive): ascending, none empty, none
    overlapping."""
    if not isinstance(windows, list) or not windows:
        raise PlanError("parameters.windows must be a list of {start, end}")
    found: list[tuple[date, date]] = []
    for n, window in enumerate(windows):
        if not isinstance(window, dict) or set(window) != {"start", "end"}:
            raise PlanError(f"parameters.windows[{n}] must be {{start, end}}")
        start = parse_date(window["start"], f"parameters.windows[{n}].start")
        end = parse_date(window["end"], f"parameters.windows[{n}].end")
        if start >= end or (found and start < found[-1][1]):
            raise PlanError(f"parameters.windows[{n}] ({start} .. {end}) is empty or overlaps the one before")
        found.append((start, end))
    return found


def differences(planned: dict, now: dict) -> list[str]:
    """What makes a plan stale: its scope (models, tables, windows, a restatement's late keys),
    its gates (the data tests) or its code (each model's SQL and configuration, the macros,
    dbt_project.yml) differs from a plan made now with the same parameters. One line per
    difference, for a reviewer."""
    lines = []
    for key in sorted(set(planned["scope"]) | set(now["scope"])):
        before, after = planned["scope"].get(key), now["scope"].get(key)
        if before != after:
            lines.append(f"scope.{key}: {_change(before, after)}")
    gone = sorted(set(planned["gates"]) - set(now["gates"]))
    added = sorted(set(now["gates"]) - set(planned["gates"]))
    if gone or added:  # the data tests the branches must pass before publishing
        lines.append(
            "gates: "
            + "; ".join(
                part
                for part in (
                    f"planned only: {', '.join(gone)}" * bool(gone),
                    f"now only: {', '.join(added)}" * bool(added),
                )
                if part
            )
        )
    code_before, code_after = planned["code"], now["code"]
    models_before, models_after = code_before.get("models") or {}, code_after.get("models") or {}
    for name in sorted(set(models_before) | set(models_after)):
        if models_before.get(name) != models_after.get(name):
            what = (
                "added"
                if name not in models_before
                else "removed"
                if name not in models_after
                else "its SQL or its configuration changed"
            )
            lines.append(f"code.models.{name}: {what}")
    for key in ("macros", "dbt_project"):
        if code_before.get(key) != code_after.get(key):
            lines.append(f"code.{key}: changed ({str(code_before.get(key))[:12]} -> {str(code_after.get(key))[:12]})")
    return lines


def notes(planned: dict, now: dict) -> list[str]:
    """What moved since planning without changing the scope: the commit, each table's snapshot
    (a daily run committed), the estimate's totals."""
    lines = []
    if planned["code"].get("git_commit") != now["code"].get("git_commit"):
        lines.append(
            f"the project is at commit {now['code'].get('git_commit')}, planned at "
            f"{planned['code'].get('git_commit')} (the models and macros in scope are unchanged)"
        )
    before, after = planned["data"].get("snapshots") or {}, now["data"].get("snapshots") or {}
    moved = sorted(t for t in set(before) | set(after) if before.get(t) != after.get(t))
    if moved:
        lines.append(f"tables committed to since planning: {', '.join(moved)}")
    for figure in ("live_rows", "partitions"):
        was, nowsum = _total(planned, figure), _total(now, figure)
        if was != nowsum:
            lines.append(f"estimate: {figure} {was} when planned, {nowsum} now")
    return lines


def _total(document: dict, figure: str) -> int:
    return sum(int(row.get(figure) or 0) for row in document["estimate"].get("windows") or [])


def _change(before: object, after: object) -> str:
    if isinstance(before, list) and isinstance(after, list):
        gone = [_text(v) for v in before if v not in after]
        new = [_text(v) for v in after if v not in before]
        return (
            "; ".join(
                part
                for part in (f"planned only: {', '.join(gone)}" * bool(gone), f"now only: {', '.join(new)}" * bool(new))
                if part
            )
            or "reordered"
        )
    return f"{_text(before)} -> {_text(after)}"


def _text(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v}" for k, v in value.items()) + "}"
    return str(value)


def unresolved(document: dict, model_names: set[str]) -> list[str]:
    """The plan's models (scope and selection) that are not models of the project: what the fast
    test of a project's checked-in plans reports."""
    selected = [s.strip("+") for s in parse_selectors(document["parameters"].get("select"))]
    return sorted({*document["scope"]["models"], *selected} - model_names)
