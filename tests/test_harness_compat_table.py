"""The README's harness tables as `scripts/harness_compat` writes them: the second table lists every
CLI in `harnesses/unsupported.py` with its reason, and no unsupported CLI is also registered."""

from __future__ import annotations

import dataclasses
import importlib.machinery
import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from harnessrl.harnesses import HARNESSES
from harnessrl.harnesses.unsupported import UNSUPPORTED, Unsupported

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "harness_compat"


@pytest.fixture(scope="module")
def compat() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("harness_compat_under_test", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_no_unsupported_cli_is_registered() -> None:
    names = [u.name for u in UNSUPPORTED]
    assert len(names) == len(set(names))
    assert names == sorted(names)
    assert not set(names) & set(HARNESSES), "a registered harness is also listed as unsupported"


def test_every_entry_names_a_pinned_package_and_a_reason() -> None:
    for u in UNSUPPORTED:
        assert u.package.split()[0] in ("npm", "PyPI", "GitHub"), u.name
        assert u.summary and len(u.reason) > 80, u.name
        assert "\n" not in u.reason, u.name
    with pytest.raises(dataclasses.FrozenInstanceError):
        UNSUPPORTED[0].name = "x"  # type: ignore[misc]


def test_rendering_includes_every_entry(compat: ModuleType) -> None:
    lines = compat.unsupported_table()
    assert lines[:4] == [compat.UNSUPPORTED_TITLE, "", *compat.UNSUPPORTED_HEADER]
    rows = lines[4:]
    assert len(rows) == len(UNSUPPORTED)
    for row, u in zip(rows, UNSUPPORTED, strict=True):
        assert row == f"| {u.name} | {u.package} | {u.summary} | {u.reason} |"


def test_cells_escape_pipes_and_newlines(compat: ModuleType) -> None:
    entry = Unsupported("x", "npm x 1.0", "a | b", "line one\nline | two")
    assert compat.unsupported_table((entry,))[-1] == "| x | npm x 1.0 | a \\| b | line one line \\| two |"


def test_readme_gets_both_tables_and_keeps_old_rows(compat: ModuleType, tmp_path: Path) -> None:
    old = "| pi 1.0 | openai | yes | yes | yes | 1.00 | ok | 5,000 | yes / yes |"
    readme = tmp_path / "README.md"
    readme.write_text(
        f"intro\n{compat.START}\nstale\n\n{compat.HEADER[0]}\n{compat.HEADER[1]}\n{old}\n{compat.END}\nend\n"
    )
    new = "| codex 2.0 | openai-responses | yes | yes | yes | 1.00 | ok | 9,000 | no / yes |"
    for _ in range(2):  # a second run must not take the second table's rows for harness rows
        compat.update_readme(readme, [new], "task_0000", ["codex", "pi"])
    text = readme.read_text()
    block = text[text.index(compat.START) + len(compat.START) + 1 : text.index(compat.END) - 1]
    assert text.startswith("intro\n") and text.endswith(f"{compat.END}\nend\n")
    assert block.splitlines()[2:] == [*compat.HEADER, new, old, "", *compat.unsupported_table()]
