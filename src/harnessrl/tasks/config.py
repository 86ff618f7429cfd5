"""Config sections of `tasks/`: which task set a run uses.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from harnessrl.config_section import Section


class TasksConfig(Section):
    path: str = "bundled"
    """Task set: `bundled`, a ClawGym split folder, a `syn_task.jsonl`, or a PinchBench .md folder."""
    split: str | None = None
    """Only tasks of this split (bundled: `train` / `test`)."""
    limit: int | None = None
    """Use at most this many tasks (after filtering by split)."""
