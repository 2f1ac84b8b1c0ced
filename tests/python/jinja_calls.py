"""Calls of the framework's macros in Jinja code, for the package convention: inside a macro of
an installed package, dbt resolves an unqualified name only against the calling model's project
(and dbt's own macros), so a framework macro that calls another one must name its package
(`backfill_safe.x()`), as dbt-utils does. This module finds the unqualified calls: in `{{ }}`
and `{% %}` code only, outside string literals and `{# #}` comments."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "backfill_safe"
_DEFINITION = re.compile(r"\{%-?\s*(?:macro|test|materialization)\s+([A-Za-z_][A-Za-z0-9_]*)")
_OPEN = re.compile(r"\{\{|\{%|\{#")
_NAME = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)(\s*\()")


def defined_macros(files: list[Path]) -> set[str]:
    return {m for f in files for m in _DEFINITION.findall(f.read_text())}


def _code_spans(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each piece of Jinja code outside string literals and comments."""
    pos = 0
    while (opened := _OPEN.search(text, pos)) is not None:
        if opened.group() == "{#":
            pos = text.index("#}", opened.end()) + 2
            continue
        close = "}}" if opened.group() == "{{" else "%}"
        i, start = opened.end(), opened.end()
        while not text.startswith(close, i):
            if text[i] in "'\"":
                yield start, i
                quote, i = text[i], i + 1
                while text[i] != quote:
                    i += 2 if text[i] == "\\" else 1
                start = i + 1
            i += 1
        yield start, i
        pos = i + 2


def unqualified_calls(text: str, names: set[str]) -> list[tuple[int, str]]:
    """(offset, name) of each call of one of `names` not written as `backfill_safe.name(`,
    a macro's own definition excepted."""
    definitions = {m.start(1) for m in _DEFINITION.finditer(text)}
    found = []
    for start, end in _code_spans(text):
        for call in _NAME.finditer(text, start, end):
            if call.group(1) in names and call.start(1) not in definitions:
                found.append((call.start(1), call.group(1)))
    return found


def qualify(text: str, names: set[str]) -> str:
    for offset, name in sorted(unqualified_calls(text, names), reverse=True):
        text = f"{text[:offset]}{PACKAGE}.{text[offset:]}"
    return text
