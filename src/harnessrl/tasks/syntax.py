"""Checker files are compiled (never run) at load time, so a syntax error is a load error with its line.

Without this a broken checker loads fine and every rollout of the task scores 0.0 with the error buried
in a verifier log. `compile()` parses the source and executes nothing.
"""

from __future__ import annotations

from typing import NamedTuple

from harnessrl.types import TaskFile


class SyntaxProblem(NamedTuple):
    """The first syntax error of a task's python checker files."""

    file: TaskFile
    line: int | None
    """1-based line inside `file` (None when python gives none)."""
    message: str


def first_syntax_error(files: list[TaskFile]) -> SyntaxProblem | None:
    """Compile every `.py` file of `files` in order; the first one that does not compile, or None."""
    for f in files:
        if not f.path.endswith(".py"):
            continue
        source = f.source.read_bytes() if f.source is not None else (f.content or "").encode("utf-8")
        try:
            compile(source, f.path, "exec", dont_inherit=True)
        except SyntaxError as e:
            return SyntaxProblem(f, e.lineno, e.msg)
        except ValueError as e:  # null bytes in the source
            return SyntaxProblem(f, None, str(e))
    return None
