"""Small helpers several test modules share (the harness ones live in `harness_solve.py`, the SDK
conversation in `sdk_script.py`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HEAVY = "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers')))\n"
"""The last line of a torch-free check: the torch and transformers modules loaded so far."""


def assert_torch_free(code: str) -> None:
    """Run `code` (which imports `sys`) and then `HEAVY` in a fresh interpreter: neither torch nor
    transformers may have been imported."""
    res = subprocess.run([sys.executable, "-c", code + HEAVY], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "[]\n"


def workspace(folder: Path, files: dict[str, str]) -> Path:
    """Make `folder` holding `files` (relative path -> text) and return it."""
    folder.mkdir()
    for rel, text in files.items():
        (folder / rel).write_text(text)
    return folder
