"""What the dbt project declares, read from dbt's manifest (manifest.json in paths.target_dir())."""

from __future__ import annotations

import json
from dataclasses import dataclass

from pipeline import paths


@dataclass(frozen=True)
class IncrementalModel:
    name: str
    relation: str  # schema.table
    unique_key: str


def incremental_models() -> list[IncrementalModel]:
    manifest = json.loads((paths.target_dir() / "manifest.json").read_text())
    models = []
    for node in manifest["nodes"].values():
        config = node.get("config", {})
        if node["resource_type"] == "model" and config.get("materialized") == "incremental":
            models.append(IncrementalModel(node["name"], f"{node['schema']}.{node['alias']}", config["unique_key"]))
    return sorted(models, key=lambda m: (not m.name.startswith("dim_"), m.name))


def relation_of(model_name: str) -> str:
    """schema.table of any model of the project."""
    manifest = json.loads((paths.target_dir() / "manifest.json").read_text())
    for node in manifest["nodes"].values():
        if node["resource_type"] == "model" and node["name"] == model_name:
            return f"{node['schema']}.{node['alias']}"
    raise KeyError(f"no model {model_name} in {paths.target_dir() / 'manifest.json'}")
