"""No function of the tree's code is over `MAX_LINES` lines (issue 39): long ones are split into helpers.

The sources are every ``*.py`` under ``packages/*/src``, ``apps/`` and ``benchmarks/``; a function's length
is ``end_lineno - lineno + 1`` of its `ast` node (decorators not counted, its docstring counted), for
functions, async functions and methods at any depth (a nested function counts for itself and inside the
function that holds it).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
MAX_LINES = 90


def _sources() -> list[Path]:
    """The Python files checked: the packages' sources, the apps and the benchmarks."""
    roots = [*sorted((ROOT / "packages").glob("*/src")), ROOT / "apps", ROOT / "benchmarks"]
    return sorted(path for root in roots for path in root.rglob("*.py") if "__pycache__" not in path.parts)


def long_functions(source: str, *, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """The functions of `source` longer than `limit` lines.

    Args:
        source: Python source text.
        limit: The most lines a function may take.

    Returns:
        (qualified name, lines) of each longer function, in source order; a method is named
        ``Class.method``, a nested function ``outer.inner``.
    """
    found: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    lines = (child.end_lineno or child.lineno) - child.lineno + 1
                    if lines > limit:
                        found.append((name, lines))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def _function(lines: int) -> str:
    """Source of a module-level function of exactly `lines` lines."""
    return "def f():\n" + "    x = 1\n" * (lines - 2) + "    return x\n"


def test_the_measure_counts_lines_of_functions_methods_and_nested_functions():
    assert long_functions(_function(90)) == []
    assert long_functions(_function(91)) == [("f", 91)]
    body = "".join(f"        y{i} = {i}\n" for i in range(95))
    method = f"class C:\n    async def m(self):\n{body}        return 0\n"
    assert long_functions(method) == [("C.m", 97)]
    nested = f"def outer():\n    def inner():\n{body}        return 0\n    return inner\n"
    assert long_functions(nested) == [("outer", 99), ("outer.inner", 97)]


def test_no_function_in_the_tree_is_over_90_lines():
    sources = _sources()
    assert ROOT / "apps" / "train.py" in sources  # the walk sees the tree
    assert any(path.name == "http_json.py" for path in sources)
    offenders = [
        f"{path.relative_to(ROOT)}::{name} ({lines} lines)"
        for path in sources
        for name, lines in long_functions(path.read_text(encoding="utf-8"))
    ]
    assert not offenders, (
        f"{len(offenders)} function(s) over {MAX_LINES} lines; split each into helpers with one job: "
        + "; ".join(offenders)
    )
