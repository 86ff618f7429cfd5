"""The house limits on size (AGENTS.md, issue 36): no module in src/harnessrl over 450 lines, no
function over 60. Measured exactly from the source: a module's lines as `str.splitlines` counts them,
a function's from its first decorator (or its `def`) to its last line, nested functions and methods
each measured on their own (and inside their parent's count)."""

from __future__ import annotations

import ast
from pathlib import Path

import harnessrl

SRC = Path(harnessrl.__file__).resolve().parent
MODULE_LINES = 450
FUNCTION_LINES = 60


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def function_lengths(source: str) -> list[tuple[str, int, int]]:
    """(qualified name, line of its `def`, lines) of every function and method in `source`."""
    found: list[tuple[str, int, int]] = []

    def walk(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                assert child.end_lineno is not None
                found.append((prefix + child.name, child.lineno, child.end_lineno - start + 1))
                walk(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, f"{prefix}{child.name}.")
            else:
                walk(child, prefix)

    walk(ast.parse(source), "")
    return found


def test_the_measure_counts_decorators_and_nested_functions() -> None:
    source = (
        "@a\n@b(\n  1)\ndef f():\n    def g():\n        pass\n    return g\n\n"
        "class C:\n    async def m(self):\n        pass\n"
    )
    assert function_lengths(source) == [("f", 4, 7), ("f.g", 5, 2), ("C.m", 10, 2)]


def test_no_module_over_450_lines() -> None:
    sizes = {p: len(p.read_text(encoding="utf-8").splitlines()) for p in _modules()}
    assert len(sizes) > 200  # the whole package was read
    over = sorted(f"{p.relative_to(SRC)}: {n}" for p, n in sizes.items() if n > MODULE_LINES)
    assert over == [], f"modules over {MODULE_LINES} lines (split them into stages): {over}"


def test_no_function_over_60_lines() -> None:
    over = []
    for path in _modules():
        for name, line, n in function_lengths(path.read_text(encoding="utf-8")):
            if n > FUNCTION_LINES:
                over.append(f"{path.relative_to(SRC)}:{line} {name}: {n}")
    assert over == [], f"functions over {FUNCTION_LINES} lines (split them into named stages): {over}"
