"""Dual-run comparison: a model built by full refresh into a scratch schema against its
incremental table, by primary key. The migration path from full refresh to incremental: run
both side by side until this reports no difference.

`dbt run --select MODEL --full-refresh --vars {dual_run_model: MODEL, dual_run_schema: S}` builds
the model into schema S only (generate_schema_name; its upstream models are read where they
are; advance_watermark renders nothing, so the daily watermark does not move). The two tables
are then joined once on the unique key, null-safe on every other column.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field

from pipeline import iceberg
from pipeline.dbt import Dbt
from pipeline.engine import Sql
from pipeline.manifest import incremental_models

_SCHEMA = re.compile(r"[a-z_][a-z0-9_]{0,63}")
SAMPLE = 5


class CompareError(ValueError):
    """A model or schema that cannot be compared; the message names it."""


@dataclass
class Comparison:
    model: str
    incremental_table: str
    full_refresh_table: str
    unique_key: str
    # relative to the full refresh (the truth): rows the incremental table lacks are `missing`,
    # rows it has that the full refresh has not are `extra`
    identical: int = 0
    modified: int = 0
    missing: int = 0
    extra: int = 0
    column_mismatches: dict[str, int] = field(default_factory=dict)
    sample_keys: dict[str, list[str]] = field(default_factory=dict)

    @property
    def equal(self) -> bool:
        return self.modified == self.missing == self.extra == 0

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "equal": self.equal}, default=str, indent=2)


def compare(spark: Sql, dbt: Dbt, model: str, scratch_schema: str = "dual_run", keep: bool = False) -> Comparison:
    if not _SCHEMA.fullmatch(scratch_schema):
        raise CompareError(f"--scratch-schema {scratch_schema!r} is not a schema name (lowercase letters, digits, _)")
    dbt.invoke("parse")
    models = {m.name: m for m in incremental_models()}
    if model not in models:
        raise CompareError(f"{model!r} is not an incremental model of the project ({', '.join(sorted(models))})")
    target = models[model]
    if target.relation.split(".")[0] == scratch_schema:
        raise CompareError(f"--scratch-schema {scratch_schema!r} is the model's own schema")
    if not iceberg.table_exists(spark, target.relation):
        raise CompareError(f"{target.relation} does not exist yet: build it first (dbt build)")
    scratch = f"{scratch_schema}.{target.relation.split('.')[1]}"
    dual_run_vars = json.dumps({"dual_run_model": model, "dual_run_schema": scratch_schema})
    # the full refresh must land in the scratch schema, never in the model's own: the project's
    # generate_schema_name routes it (backfill_safe.dual_run_schema); checked before any build
    dbt.invoke("parse", "--vars", dual_run_vars)
    routed = {m.name: m for m in incremental_models()}[model].relation
    if routed.split(".")[0] != scratch_schema:
        dbt.invoke("parse")  # the next invocation's manifest has the model in its own schema again
        raise CompareError(
            f"the project's generate_schema_name puts the dual run's build of {model} in {routed}, not in "
            f"{scratch_schema}: make it return backfill_safe.dual_run_schema(node) first when that is not none "
            "(docs/guides/adopt-the-framework.md); nothing was built"
        )
    spark.sql(f"create schema if not exists {scratch_schema}")
    try:
        dbt.invoke("run", "--select", model, "--full-refresh", "--vars", dual_run_vars)
        return diff(spark, model, target.relation, scratch, target.unique_key)
    finally:
        if not keep:
            spark.sql(f"drop table if exists {scratch} purge")
        dbt.invoke("parse")  # the next invocation's manifest has the model in its own schema again


def diff(spark: Sql, model: str, incremental: str, full_refresh: str, key: str) -> Comparison:
    """Join the two tables once on `key` and count, per key, identical / modified / missing /
    extra rows and, for modified rows, the mismatches of each column."""
    columns = [c for c in spark.table(full_refresh).columns if c != key]
    missing_columns = sorted(set(columns) ^ (set(spark.table(incremental).columns) - {key}))
    if missing_columns:
        raise CompareError(
            f"{incremental} and {full_refresh} have different columns: {', '.join(missing_columns)}; "
            "the model changed since the table was built: rebuild it with --full-refresh"
        )
    differs = [f"not (f.`{c}` <=> i.`{c}`)" for c in columns]
    state = (
        f"case when i.`{key}` is null then 'missing' when f.`{key}` is null then 'extra' "
        f"when {' or '.join(differs) or 'false'} then 'modified' else 'identical' end"
    )
    joined = (
        f"select coalesce(f.`{key}`, i.`{key}`) as k, {state} as state, "
        + ", ".join(f"({d}) as `m_{c}`" for c, d in zip(columns, differs))
        + f" from {full_refresh} as f full outer join {incremental} as i on f.`{key}` = i.`{key}`"
    )
    counts = ", ".join(
        [f"count_if(state = '{s}') as {s}" for s in ("identical", "modified", "missing", "extra")]
        + [f"count_if(state = 'modified' and `m_{c}`) as `m_{c}`" for c in columns]
        + [
            f"slice(sort_array(collect_list(case when state = '{s}' then cast(k as string) end)), 1, {SAMPLE})"
            f" as sample_{s}"
            for s in ("modified", "missing", "extra")
        ]
    )
    row = spark.sql(f"select {counts} from ({joined})").collect()[0]
    return Comparison(
        model=model,
        incremental_table=incremental,
        full_refresh_table=full_refresh,
        unique_key=key,
        identical=row.identical,
        modified=row.modified,
        missing=row.missing,
        extra=row.extra,
        column_mismatches={c: row[f"m_{c}"] for c in columns if row[f"m_{c}"]},
        sample_keys={s: list(row[f"sample_{s}"]) for s in ("modified", "missing", "extra") if row[f"sample_{s}"]},
    )
