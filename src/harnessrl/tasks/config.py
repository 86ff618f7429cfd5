"""Config sections of `tasks/`: which task set a run uses.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Literal

from harnessrl.config_section import Section

TaskFormat = Literal["auto", "harbor", "clawgym", "jsonl", "pinchbench"]


class TasksConfig(Section):
    path: str = "bundled"
    """Task set: `bundled`, a ClawGym split folder, a `syn_task.jsonl`, a PinchBench .md folder, or a
    Harbor task or dataset folder."""
    format: TaskFormat = "auto"
    """The task set's format: `auto` (detected, `tasks/loader.py`) or the one format to look for."""
    split: str | None = None
    """Only tasks of this split (bundled: `train` / `test`)."""
    limit: int | None = None
    """Use at most this many tasks (after filtering by split)."""
