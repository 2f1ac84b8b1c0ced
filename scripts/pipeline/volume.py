"""Whether each `volume_within_band` test can fire at its table's current volume.

The generic test (macros/tests/volume_within_band.sql) stays quiet while fewer than
`min_history_days` dates of history exist and while the trailing median of rows per date is
below `min_trailing_mean`: on a small table (a few rows a date) it can never fire, and its
passing says nothing. Per test of the manifest (its own arguments, the macro's defaults for the
rest, read from the macro's signature), the test's own figures at the table's recent dates (macro
volume_band_figures, read through `dbt show`: the same spine and median the test judges, not a
copy of its SQL); when no recent date gets past both guards, a statement says why. Shown by
`pipeline status` and on the status page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline import iceberg
from pipeline.dbt import Dbt
from pipeline.engine import Sql
from pipeline.manifest import _IDENTIFIER, _manifest, _relation

TEST = "volume_within_band"


@dataclass(frozen=True)
class VolumeTest:
    model: str
    relation: str  # schema.table of the model
    date_column: str
    trailing_days: int
    min_history_days: int
    recent_days: int
    min_trailing_mean: float


def volume_tests() -> list[VolumeTest]:
    """Every enabled `volume_within_band` test of the manifest, with its arguments (names checked
    to be identifiers, numbers to be numbers: they reach SQL)."""
    manifest = _manifest()
    found = []
    for node in manifest["nodes"].values():
        metadata = node.get("test_metadata") or {}
        model = manifest["nodes"].get(node.get("attached_node") or "")
        if node["resource_type"] != "test" or metadata.get("name") != TEST or model is None:
            continue
        arguments = {**_defaults(manifest, node), **metadata.get("kwargs", {})}
        relation, column = _relation(model), str(arguments.get("date_column"))
        for name in [*relation.split("."), column]:
            if not _IDENTIFIER.fullmatch(name):
                raise ValueError(f"test {node['name']}: {name!r} is not an identifier")
        try:
            found.append(
                VolumeTest(
                    model["name"],
                    relation,
                    column,
                    int(arguments["trailing_days"]),
                    int(arguments["min_history_days"]),
                    int(arguments["recent_days"]),
                    float(arguments["min_trailing_mean"]),
                )
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"test {node['name']}: an argument is missing or not a number: {error}") from error
    return sorted(found, key=lambda t: (t.model, t.date_column))


def _defaults(manifest: dict, node: dict) -> dict[str, str]:
    """The defaults in the signature of the test's macro (the one the node depends on), e.g.
    {'trailing_days': '14', ...}: the macro's own, not a copy of them here."""
    for unique_id in node.get("depends_on", {}).get("macros", []):
        macro = manifest["macros"].get(unique_id) or {}
        if macro.get("name") == f"test_{TEST}":
            signature = macro["macro_sql"].split("%}", 1)[0]
            return dict(re.findall(r"(\w+)\s*=\s*([\d.]+)", signature))
    return {}


def cannot_fire(spark: Sql, dbt: Dbt, test: VolumeTest) -> str | None:
    """Why `test` cannot fire at its table's current volume; None when one of its recent dates
    gets past both guards (or the table is not built: nothing to judge). The figures are the
    test's own (volume_band_figures), said for the latest date."""
    if not iceberg.table_exists(spark, test.relation):
        return None
    days = test.trailing_days
    # names checked to be identifiers and numbers to be numbers (volume_tests): safe in Jinja and SQL
    recent = sorted(
        dbt.show(
            f"{{{{ backfill_safe.volume_band_figures('{test.relation}', '{test.date_column}',"
            f" {days}, {test.recent_days}) }}}}"
        ),
        key=lambda r: r["day"],
        reverse=True,
    )
    name = f"{TEST} on {test.model} ({test.date_column})"
    if not recent:
        return f"{name} cannot fire: its table has no rows"
    if any(
        r["trailing_days"] >= test.min_history_days
        and r["trailing_mean"] is not None
        and r["trailing_mean"] >= test.min_trailing_mean
        for r in recent
    ):
        return None
    latest, why = recent[0], []
    history, median = latest["trailing_days"], latest["trailing_mean"]
    if days < test.min_history_days:
        why.append(f"its trailing_days {days} is fewer than min_history_days {test.min_history_days}")
    elif history < test.min_history_days:
        why.append(f"only {history} dates of history, fewer than min_history_days {test.min_history_days}")
    if median is not None and median < test.min_trailing_mean:
        why.append(
            f"its trailing median is {float(median):g} rows a date, below min_trailing_mean {test.min_trailing_mean:g}"
        )
    if not why:  # min_history_days 0 and one date: no median to compare with
        why.append("no date before its latest to compare with")
    return f"{name} cannot fire: {'; '.join(why)}"


def silent_tests(spark: Sql, dbt: Dbt) -> list[str]:
    """Per `volume_within_band` test that cannot fire at its table's current volume, why."""
    return [why for test in volume_tests() if (why := cannot_fire(spark, dbt, test)) is not None]
