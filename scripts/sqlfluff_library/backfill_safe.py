"""A stand-in for dbt's package namespace `backfill_safe`, for sqlfluff's jinja templater only.

The framework's macros call each other as `backfill_safe.name(...)` (a package's macros run in
the context of the team's model, where dbt finds an unqualified name only in that project).
sqlfluff loads the macros of macros/ into its context by bare name, so `backfill_safe.name`
looks `name` up in the calling template's context. dbt itself never imports this module.
"""

from __future__ import annotations

from typing import Any

from jinja2 import pass_context


def __getattr__(name: str) -> Any:
    if name.startswith("_"):
        raise AttributeError(name)

    @pass_context
    def call(context: Any, *args: Any, **kwargs: Any) -> Any:
        return context[name](*args, **kwargs)

    return call
