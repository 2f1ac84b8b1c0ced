"""The package's Python held to its conventions, without Spark: no module over 600 lines and no
function over 80 (a room a newcomer can read), and the linters the fast tier runs (ruff's rules
and format, mypy; pyproject.toml) refuse what they are set to refuse."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.paths import PROJECT_DIR

pytestmark = pytest.mark.fast

PACKAGE = PROJECT_DIR / "scripts" / "pipeline"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
# module or "module:function" -> why it may be longer (none today)
EXCEPTIONS: dict[str, str] = {}
BIN = Path(sys.executable).parent


def _sizes() -> tuple[dict[str, int], dict[str, int]]:
    modules, functions = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = str(path.relative_to(PROJECT_DIR))
        text = path.read_text()
        modules[name] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                # from its `def` line to its last (decorators and the blank lines after not counted)
                functions[f"{name}:{node.name}:{node.lineno}"] = node.end_lineno - node.lineno + 1
    return modules, functions


def test_no_module_of_the_package_is_over_600_lines_and_no_function_over_80():
    modules, functions = _sizes()
    assert len(modules) > 30 and functions, "the package was not found"
    long_modules = {name: lines for name, lines in modules.items()
                    if lines > MAX_MODULE_LINES and name not in EXCEPTIONS}
    long_functions = {name: lines for name, lines in functions.items()
                      if lines > MAX_FUNCTION_LINES and name.rsplit(":", 1)[0] not in EXCEPTIONS}
    assert not long_modules, f"modules over {MAX_MODULE_LINES} lines (split them by role): {long_modules}"
    assert not long_functions, f"functions over {MAX_FUNCTION_LINES} lines: {long_functions}"
    assert all(name.split(":")[0] in modules for name in EXCEPTIONS), "an exception names no module of the package"


def _project_copy(tmp_path: Path) -> Path:
    """The package and the linters' configuration, copied: what the fast tier lints, to plant in."""
    shutil.copytree(PACKAGE, tmp_path / "scripts" / "pipeline", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(PROJECT_DIR / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _run(tool: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / tool), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_ruff_refuses_an_unused_import_and_an_unformatted_line_in_the_package(tmp_path: Path):
    copy = _project_copy(tmp_path)
    assert _run("ruff", "check", cwd=copy).returncode == 0
    assert _run("ruff", "format", "--check", cwd=copy).returncode == 0
    planted = copy / "scripts" / "pipeline" / "backfill" / "gate.py"
    planted.write_text(planted.read_text().replace("import json\n", "import json\nimport os\n", 1)
                       + "\n\ndef planted( a,b ):\n    return  a+b\n")
    lint = _run("ruff", "check", cwd=copy)
    assert lint.returncode == 1 and "gate.py" in lint.stdout and "F401" in lint.stdout, lint.stdout
    formatted = _run("ruff", "format", "--check", cwd=copy)
    assert formatted.returncode == 1 and "gate.py" in formatted.stdout, formatted.stdout


def test_mypy_refuses_a_return_of_the_wrong_type_in_the_package(tmp_path: Path):
    copy = _project_copy(tmp_path)
    planted = copy / "scripts" / "pipeline" / "backfill" / "scope.py"
    lines = planted.read_text().splitlines(keepends=True)
    at = lines.index("        return 31\n")  # max_batch_days() -> int: its default
    lines[at] = '        return "31"\n'
    planted.write_text("".join(lines))
    checked = _run("mypy", "--cache-dir", str(tmp_path / "cache"), cwd=copy)
    assert checked.returncode == 1, checked.stdout
    assert f'scope.py:{at + 1}: error: Incompatible return value type (got "str", expected "int")' \
        in checked.stdout, checked.stdout
    assert "Found 1 error in 1 file" in checked.stdout, checked.stdout
