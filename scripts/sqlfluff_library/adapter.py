"""A stand-in for dbt's `adapter` object, for sqlfluff's jinja templater only.

sqlfluff renders both branches of `{% if is_incremental() %}` to lint them, which reaches
`adapter.get_columns_in_relation(this)` in rows_to_merge/guarded_merge_sql. Outside dbt there
is no relation to describe, so this returns two placeholder columns: enough for the rendered
SQL to parse; `get_relation` answers that a relation exists, so the branch a data test takes
once its table is there is the one linted. dbt itself never imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class _Column:
    name: str


def get_columns_in_relation(relation: object) -> list[_Column]:
    return [_Column("placeholder_key"), _Column("placeholder_value")]


@dataclass(frozen=True)
class _Relation:
    schema: str
    identifier: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.identifier}"


def get_relation(database: object = None, schema: str = "", identifier: str = "") -> _Relation:
    """A relation that exists: the branch a data test takes once its table is there gets linted."""
    return _Relation(schema, identifier)
