"""Config sections of `evaluate/`: `harnessrl eval`.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from harnessrl.config_section import Section
from harnessrl.rollout.config import RolloutSections
from harnessrl.tasks.config import TasksConfig
from harnessrl.train.config import TrainConfig


class EvalConfig(Section):
    """`harnessrl eval`: Pass@1 over repeated runs of every (task, harness) pair (`harnessrl.evaluate`)."""

    harnesses: list[str] = Field(default_factory=list)
    """Harnesses evaluated (empty = `[rollout.harness]`); `whitebox:<code>` names work like any other."""
    runs: int = Field(default=3, ge=1)
    """Runs R of every (task, harness) pair; pass@k and pass^k are estimated for k = 1..R."""
    pass_threshold: float = 1.0
    """A rollout passes when it ended `ok` with a score at or above this."""
    seed: int = 0
    """Base seed: run r of (task, harness) samples with seed sha256(seed/task/harness/r) (recorded)."""
    out_dir: str = "runs/eval"
    """The report (`eval.json`, `eval.md`) and one rollout folder per rollout are written here."""
    checkpoints: list[str] = Field(default_factory=list)
    """Policies evaluated in turn: `default`, a model folder, a trainer checkpoint `step-<n>/` or a
    train run folder (its latest checkpoint), each optionally `label=PATH`; empty = `engine.model`."""
    bootstrap_resamples: int = Field(default=10_000, ge=1)
    """With several policies: resamples of the paired bootstrap over tasks behind each difference's
    interval (`evaluate.paired`; seeded by `seed`, so the same report gives the same interval)."""
    confidence: float = Field(default=0.95, gt=0, lt=1)
    """Coverage of the paired differences' percentile bootstrap intervals."""
    per_category: dict[str, int] = Field(default_factory=dict)
    """Harness -> evaluate through it only the first N tasks (in task order) of each task category:
    an expensive harness on a stated subset. Every policy gets the same subset, so comparisons stay
    paired; a harness not named gets every task."""
    harness_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Adapter switches per harness name; the key `whitebox` applies to every `whitebox:<code>`.
    A harness without an entry gets `train.harness_options[name]` (whitebox: the harness space's)."""


class EvalSections(RolloutSections):
    """What `evaluate.evaluate` reads: the rollout sections plus the evaluation, the task set it names
    in its report, and the training whose harness options and harness space it evaluates with."""

    tasks: TasksConfig = Field(default_factory=TasksConfig)
    """The task set."""
    train: TrainConfig = Field(default_factory=TrainConfig)
    """The RL loop (`harnessrl train`) and its trainer."""
    eval: EvalConfig = Field(default_factory=EvalConfig)
    """`harnessrl eval`."""
