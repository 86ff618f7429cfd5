"""Small helpers several test modules share (the harness ones live in `harness_solve.py`, the SDK
conversation in `sdk_script.py`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from harnessrl.config import Config

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


def small_train_config(out: Path, engine: dict[str, Any], rollout: dict[str, Any], **train: Any) -> Config:
    """A one-step run into `out` (lr 1e-2, 2 tasks x 2 rollouts a step) on `engine` and `rollout`
    settings; `train` adds and overrides train settings."""
    base = {"lr": 1e-2, "steps": 1, "seed": 0, "out_dir": str(out), "tasks_per_step": 2, "group_size": 2}
    return Config.model_validate({"engine": engine, "rollout": rollout, "train": base | train})
