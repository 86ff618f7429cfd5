"""The harness tables as `scripts/harness_compat` writes them: docs/harnesses.md's second table lists
every CLI in `harnesses/unsupported.py` with its reason, no unsupported CLI is also registered, and
the README's summary has one line per CLI from the full table."""

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


def test_table_gets_both_tables_and_keeps_old_rows(compat: ModuleType, tmp_path: Path) -> None:
    old = "| pi 1.0 | openai | yes | yes | yes | 1.00 | ok | 5,000 | yes / yes |"
    table = tmp_path / "harnesses.md"
    table.write_text(
        f"intro\n{compat.START}\nstale\n\n{compat.HEADER[0]}\n{compat.HEADER[1]}\n{old}\n{compat.END}\nend\n"
    )
    new = "| codex 2.0 | openai-responses | yes | yes | yes | 1.00 | ok | 9,000 | no / yes |"
    for _ in range(2):  # a second run must not take the second table's rows for harness rows
        merged = compat.update_table(table, [new], "task_0000", ["codex", "pi"])
    assert merged == [new, old]
    text = table.read_text()
    block = text[text.index(compat.START) + len(compat.START) + 1 : text.index(compat.END) - 1]
    assert text.startswith("intro\n") and text.endswith(f"{compat.END}\nend\n")
    assert block.splitlines()[2:] == [*compat.HEADER, new, old, "", *compat.unsupported_table()]


def test_summary_has_one_line_per_cli(compat: ModuleType, tmp_path: Path) -> None:
    rows = [
        "| pi 0.7 (api a) | openai_chat | yes | yes | no | 1.00 | ok | 1,570 | yes / yes |",
        "| pi 0.7 (api b) | anthropic | yes | yes | no | 0.50 | ok | 1,566 | yes / yes |",
        "| pi 0.7 (api c) | openai_chat | yes | no | yes | 1.00 | error | 12,001 | no / yes |",
        "| aider 0.8 | openai_chat | yes | - | no | - | timeout | 0 | - |",
    ]
    assert compat.summary_rows(rows) == [
        "| pi | 0.7 | 3 | openai_chat, anthropic | no/yes | 0.50 - 1.00 | ok, error | 1,566 - 12,001 |",
        "| aider | 0.8 | 1 | openai_chat | no | - | timeout | - |",
    ]
    readme = tmp_path / "README.md"
    readme.write_text(f"a\n{compat.SUMMARY_START}\nstale\n{compat.SUMMARY_END}\nb\n")
    compat.update_summary(readme, rows, "docs/harnesses.md")
    lines = readme.read_text().splitlines()
    assert lines[0] == "a" and lines[-1] == "b" and "stale" not in lines
    assert lines[4:6] == compat.SUMMARY_HEADER and len(lines) == 2 + 4 + 2 + 2


def test_the_committed_readme_summary_matches_the_committed_table(compat: ModuleType, tmp_path: Path) -> None:
    """`scripts/harness_compat --readme README.md --no-run` changes nothing: the README's summary was
    written from docs/harnesses.md as it is."""
    root = SCRIPT.parent.parent
    _, block = compat.marked_block(root / "docs" / "harnesses.md", compat.START, compat.END)
    rows = compat.table_rows(block.group(1))
    assert {compat.harness_of(r).split()[0] for r in rows} == {
        n for n, h in HARNESSES.items() if h.installer in ("npm", "pypi")
    }
    readme = tmp_path / "README.md"
    readme.write_text((root / "README.md").read_text())
    compat.update_summary(readme, rows, compat.TABLE_LINK)
    assert readme.read_text() == (root / "README.md").read_text()
