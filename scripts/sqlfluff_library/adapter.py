"""A stand-in for dbt's `adapter` object, for sqlfluff's jinja templater only.

sqlfluff renders both branches of `{% if is_incremental() %}` to lint them, which reaches
`adapter.get_columns_in_relation(this)` in merge_source/guarded_merge_sql. Outside dbt there
is no relation to describe, so this returns two placeholder columns: enough for the rendered
SQL to parse. dbt itself never imports this module.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class _Column:
    name: str


def get_columns_in_relation(relation: object) -> list[_Column]:
    return [_Column("placeholder_key"), _Column("placeholder_value")]
