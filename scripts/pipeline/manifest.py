"""What the dbt project declares, read from dbt's manifest (manifest.json in paths.target_dir())."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from pipeline import paths

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class IncrementalModel:
    name: str
    relation: str  # schema.table
    unique_key: str
    # its declaration (config.meta.backfill_safe, macro declared_model), when it makes one
    declared: bool = False
    # the declared event date (a declared model with none: none), else the first partition column
    event_date: str | None = None
    current_state: str | None = None  # schema.table of the declared current state
    measures: tuple[str, ...] = ()
    sources: tuple[str, ...] = ()  # schema.table of every source it reads, directly or through models
    # the models of the kind its scope takes its changes from (scope.changes: {model: ...})
    upstream_models: tuple[str, ...] = ()
    # its scope's key (scope.key) and, per upstream model, the upstream's column holding it
    # (scope.changes: {model, key}; the scope key's own name when the entry names none)
    scope_key: str | None = None
    upstream_columns: tuple[tuple[str, str], ...] = ()
    # the sums and counts its daily runs keep by deltas (additive; macro maintained_by_deltas)
    additive: tuple[str, ...] = ()

    @property
    def change_records(self) -> str:
        """control.<its table>__changes: what its runs changed, for the models that read it (macro
        model_changes_relation)."""
        return f"control.{self.relation.split('.')[1]}__changes"

    @property
    def over_models(self) -> bool:
        """Scoped by what its upstream models' runs recorded, not by landed versions."""
        return bool(self.upstream_models)


def _manifest() -> dict:
    return json.loads((paths.target_dir() / "manifest.json").read_text())


def _relation(node: dict) -> str:
    return f"{node['schema']}.{node.get('alias') or node.get('identifier') or node['name']}"


def _upstream_sources(manifest: dict, unique_id: str) -> tuple[str, ...]:
    seen, found, stack = set(), set(), [unique_id]
    while stack:
        node_id = stack.pop()
        if node_id in seen:
            continue
        seen.add(node_id)
        if node_id in manifest["sources"]:
            found.add(_relation(manifest["sources"][node_id]))
        elif node_id in manifest["nodes"]:
            stack.extend(manifest["nodes"][node_id].get("depends_on", {}).get("nodes", []))
    return tuple(sorted(found))


def is_framework_model(node: dict) -> bool:
    """A model of the framework's kind: materialized `backfill_safe` (the macro
    is_framework_model reads the same). A model written the old way (its select ended with
    merge_source()) is refused by dbt before it runs (check_framework_declaration)."""
    return node.get("resource_type") == "model" and node.get("config", {}).get("materialized") == "backfill_safe"


def _current_state(node: dict, block: dict, by_id: dict) -> str | None:
    """schema.table of the declared current state; else, for a model materialized
    `backfill_safe`, the view of its own select the framework keeps,
    `<schema>.<alias>__current_state` (the macros declared_model and maintain_current_state
    derive the same)."""
    if block.get("current_state"):
        state = next((n for n in by_id.values() if n["name"] == block["current_state"]), None)
        return _relation(state) if state else None
    if node["config"].get("materialized") != "backfill_safe":
        return None
    return f"{_relation(node)}__current_state"


def incremental_models() -> list[IncrementalModel]:
    """The models of the framework's kind (is_framework_model); a team's plain incremental
    models (append, dbt-spark's merge, microbatch) are none of the tools' business."""
    manifest = _manifest()
    by_id = {i: n for i, n in manifest["nodes"].items() if n["resource_type"] == "model"}
    models = []
    for node in by_id.values():
        config = node.get("config", {})
        if not is_framework_model(node):
            continue
        block = (config.get("meta") or {}).get("backfill_safe")
        if block is not None and ("dimension" in block or "reference" in block):
            block = None  # a dimension's or reference table's: nothing to restate by date nor reconcile
        partition_by = config.get("partition_by") or []
        partition_by = [partition_by] if isinstance(partition_by, str) else partition_by
        state = _current_state(node, block, by_id) if block else None
        declared_columns = {
            "event_date": (block or {}).get("event_date"),
            **{f"measures[{i}]": m for i, m in enumerate((block or {}).get("measures") or [])},
        }
        for key, value in declared_columns.items():
            if value is not None and not _IDENTIFIER.fullmatch(str(value)):
                raise ValueError(
                    f"model {node['name']}: config.meta.backfill_safe.{key} = {value!r} is not a column name"
                )
        scope = (block or {}).get("scope") or {}
        scope_key = str(scope.get("key") or config["unique_key"])  # the unique key when left out
        ties = tuple(
            sorted(
                (str(change["model"]), str(change.get("key") or scope_key))
                for change in scope.get("changes") or []
                if isinstance(change, dict) and "model" in change
            )
        )
        for what, column in [("scope.key", scope_key)] * bool(ties) + [
            (f"scope.changes ({model})", column) for model, column in ties
        ]:
            if not _IDENTIFIER.fullmatch(column):
                raise ValueError(
                    f"model {node['name']}: config.meta.backfill_safe.{what} = {column!r} is not a column name"
                )
        models.append(
            IncrementalModel(
                node["name"],
                _relation(node),
                config["unique_key"],
                declared=block is not None,
                # a declared model's own (none: one over models restated by key); an undeclared one's
                # first partition column
                event_date=block.get("event_date") or None if block else (partition_by[0] if partition_by else None),
                current_state=state,
                measures=tuple((block or {}).get("measures") or ()),
                sources=_upstream_sources(manifest, node["unique_id"]),
                upstream_models=tuple(model for model, _ in ties),
                scope_key=scope_key if ties else None,
                upstream_columns=ties,
                additive=tuple(str(column) for column in (block or {}).get("additive") or ()),
            )
        )
    return sorted(models, key=lambda m: (not m.name.startswith("dim_"), m.name))


@dataclass(frozen=True)
class Downstream:
    """A node downstream of a backfill's models that the backfill did not write: a model that
    reads them (directly or through other models), or an exposure (a dashboard, a report, an
    application: a consumer that may cache what it read)."""

    name: str
    resource_type: str  # model | exposure
    materialized: str | None  # a model's materialization; None for an exposure
    # current: a view (or ephemeral) reads the published tables as they are now; rebuild: a table
    # holds what it read before the publish; full refresh: an incremental model that is not of
    # the framework's kind (its own incremental logic would not see history rewritten); backfill:
    # a model of the kind outside the run; consumer: an exposure, to be told to refresh
    refresh: str
    detail: str  # the command that refreshes the model, or the exposure's type, owner and url


def downstream_of(model_names: list[str], manifest: dict | None = None) -> list[Downstream]:
    """Every model and exposure downstream of `model_names` (dbt's child map, followed through
    models only), the models named left out, in the manifest's order of names."""
    manifest = manifest or _manifest()
    children = manifest.get("child_map") or {}
    nodes, exposures = manifest["nodes"], manifest.get("exposures") or {}
    written = {i for i, n in nodes.items() if n["resource_type"] == "model" and n["name"] in set(model_names)}
    seen: set[str] = set()
    stack = [child for node_id in written for child in children.get(node_id, [])]
    while stack:
        node_id = stack.pop()
        if node_id in seen or node_id in written:
            continue
        if node_id in exposures or (node_id in nodes and nodes[node_id]["resource_type"] == "model"):
            seen.add(node_id)
            stack.extend(children.get(node_id, []))
    found = []
    for node_id in seen:
        if node_id in exposures:
            exposure = exposures[node_id]
            owner = exposure.get("owner") or {}
            detail = ", ".join(
                str(part)
                for part in (exposure.get("type"), owner.get("name"), owner.get("email"), exposure.get("url"))
                if part
            )
            found.append(Downstream(exposure["name"], "exposure", None, "consumer", detail))
            continue
        node = nodes[node_id]
        materialized = node.get("config", {}).get("materialized")
        name = node["name"]
        if materialized in ("view", "ephemeral"):
            refresh, detail = "current", "reads the published tables"
        elif materialized == "table":
            refresh, detail = "rebuild", f"dbt run --select {name}"
        elif is_framework_model(node):
            refresh, detail = "backfill", f"pipeline backfill --select {name} over the same dates"
        else:
            refresh, detail = "full refresh", f"dbt run --full-refresh --select {name}"
        found.append(Downstream(name, "model", materialized, refresh, detail))
    return sorted(found, key=lambda d: (d.resource_type, d.name))


def models_read(model_names: list[str], manifest: dict | None = None) -> dict[str, set[str]]:
    """Per model named, the others of `model_names` it reads, directly or through any other node
    (a view, an ephemeral model, a model left out): what must be written before it is."""
    manifest = manifest or _manifest()
    nodes = manifest["nodes"]
    named = {i: n["name"] for i, n in nodes.items() if n["resource_type"] == "model" and n["name"] in set(model_names)}
    found: dict[str, set[str]] = {}
    for node_id, name in named.items():
        seen, stack, reads = set(), list(nodes[node_id].get("depends_on", {}).get("nodes", [])), set()
        while stack:
            parent = stack.pop()
            if parent in seen:
                continue
            seen.add(parent)
            if parent in named:
                reads.add(named[parent])
            elif parent in nodes:
                stack.extend(nodes[parent].get("depends_on", {}).get("nodes", []))
        found[name] = reads
    return found


def tested_models(model_names: list[str], manifest: dict | None = None) -> list[str]:
    """Those of `model_names` that a data test reads (dbt selects a test by any model it reads)."""
    manifest = manifest or _manifest()
    ids = {
        i: n["name"]
        for i, n in manifest["nodes"].items()
        if n["resource_type"] == "model" and n["name"] in set(model_names)
    }
    read = {
        parent
        for n in manifest["nodes"].values()
        if n["resource_type"] == "test"
        for parent in n.get("depends_on", {}).get("nodes", [])
    }
    return sorted(name for i, name in ids.items() if i in read)


def unreflected_changes_relation() -> str:
    """schema.table of the audit view of late changes that the framework keeps at the end of a
    run (macro unreflected_changes_view; schema: var audit_schema, default audit)."""
    try:
        schema = paths.project_var("audit_schema")
    except KeyError:
        schema = "audit"
    return f"{schema}.audit_unreflected_changes"


def code_fingerprint(model_names: list[str]) -> dict:
    """What a backfill plan records of the code it was planned on: for the models named and every
    model, seed, snapshot and source they read, directly or not, a sha256 of its SQL (dbt's file
    checksum) and of its configuration and columns from the ymls (unique_key, partitioning, the
    framework's declaration in meta, a source's contract); one sha256 over the macros of the
    project and of the framework's package (their SQL); and one of dbt_project.yml (its vars
    steer the models). The gates (data tests) are recorded apart, in the plan's `gates`."""
    import hashlib

    manifest = _manifest()
    nodes = {**manifest["nodes"], **manifest["sources"]}
    by_name = {n["name"]: i for i, n in manifest["nodes"].items() if n["resource_type"] == "model"}
    seen, stack = set(), [by_name[name] for name in model_names if name in by_name]
    while stack:
        node_id = stack.pop()
        if node_id in seen or node_id not in nodes:
            continue
        seen.add(node_id)
        stack.extend(nodes[node_id].get("depends_on", {}).get("nodes", []))

    def digest(node: dict) -> str:
        columns = {
            name: {k: column.get(k) for k in ("data_type", "constraints", "meta", "quote")}
            for name, column in sorted((node.get("columns") or {}).items())
        }
        shape = {
            "sql": (node.get("checksum") or {}).get("checksum"),
            "config": node.get("config"),
            "columns": columns,
            "relation": node.get("relation_name"),
            "meta": node.get("meta"),
            "loaded_at_field": node.get("loaded_at_field"),
        }
        return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()

    models = {
        (
            nodes[i]["name"] if i in manifest["nodes"] else f"source:{nodes[i]['source_name']}.{nodes[i]['name']}"
        ): digest(nodes[i])
        for i in sorted(seen)
        if i in manifest["sources"] or nodes[i]["resource_type"] in ("model", "seed", "snapshot")
    }
    packages = {manifest["metadata"].get("project_name"), "backfill_safe"}
    macros = hashlib.sha256()
    for unique_id in sorted(manifest["macros"]):
        macro = manifest["macros"][unique_id]
        if macro.get("package_name") in packages:
            macros.update(f"{unique_id}\0{macro.get('macro_sql', '')}\0".encode())
    project = hashlib.sha256((paths.PROJECT_DIR / "dbt_project.yml").read_bytes()).hexdigest()
    return {"models": dict(sorted(models.items())), "macros": macros.hexdigest(), "dbt_project": project}
