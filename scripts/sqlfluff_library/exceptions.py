"""Stands for dbt's Jinja `exceptions` when sqlfluff renders the project's macros.

sqlfluff's stubbed `var()` returns a placeholder string, so the validation in macros such as
lookback_days would raise; for linting, the layout of the SQL is what matters, so the error is
ignored and rendering goes on. dbt itself never imports this module.
"""

from __future__ import annotations


def raise_compiler_error(message: str) -> str:
    return ""
