"""Which rollouts one training step runs: tasks, harnesses, GRPO groups. A pure function of (seed, step).

    jobs = schedule_step(tasks, ScheduleSpec(harnesses=["claude-code", "codex"], tasks_per_step=2,
                                              group_size=4, seed=0), step=7)

Tasks are drawn epoch-wise: epoch e is a permutation of all tasks shuffled by (seed, e), and step s
takes positions [s * k, (s + 1) * k) of the concatenated epochs, so every task comes up once per epoch
and a step's tasks depend only on (seed, step). Each drawn task runs under `harnesses_per_task` of the
harnesses (all of them when 0; otherwise drawn by (seed, step, position)); each (task, harness) pair is
one GRPO group of `group_size` rollouts with group id `<task id>/<harness>` (a task drawn twice in one
step, which happens at an epoch boundary, makes one group of twice the size). Groups never mix harnesses;
a batch may mix them (mix-harness training).

Harness scaling (`spec.space`, from `[train.harness_space]`) replaces the harness list: each drawn
task runs under ONE white-box configuration per occasion, `whitebox:<code>` with the code from
`harnessrl.scaling.occasion_code` (its K-pairing over the design's configurations; the occasion is
the epoch of the draw, as every task is drawn once per epoch). Each (task, configuration) is its own
group, as above. An evaluation over configurations is then a plain loop over
`[harness_name(c) for c in eval_codes()]`, each a RolloutJob like any other harness.

Nothing here reads global RNG state: resuming at step s gives exactly the jobs step s had in the
original run.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harnessrl.rollout.runner import RolloutJob
from harnessrl.types import Task, group_id


@dataclass(frozen=True)
class SpaceSpec:
    """Harness scaling: the design's training configurations and the K-pairing (`harnessrl.scaling`)."""

    codes: tuple[str, ...]
    k: int = 2
    pairing: str = "nearest"
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    """Whitebox switches for every configuration."""


@dataclass(frozen=True)
class ScheduleSpec:
    """The knobs of the schedule (built from TrainConfig by the loop)."""

    harnesses: tuple[str, ...]
    tasks_per_step: int = 2
    group_size: int = 2
    harnesses_per_task: int = 0
    """0 = every harness for every drawn task."""
    seed: int = 0
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Adapter switches per harness name (RolloutJob.options)."""
    space: SpaceSpec | None = None
    """Harness scaling instead of `harnesses` (module docstring)."""


def _rng(*parts: object) -> random.Random:
    """A generator seeded by a string of the parts (str seeds are hashed with SHA-512: stable)."""
    return random.Random("/".join(str(p) for p in parts))


def task_draws(num_tasks: int, step: int, per_step: int, seed: int) -> list[tuple[int, int]]:
    """(task index, epoch) of each draw of `step` (see the module docstring)."""
    if num_tasks < 1:
        raise ValueError("no tasks to schedule")
    out: list[tuple[int, int]] = []
    perms: dict[int, list[int]] = {}
    for pos in range(step * per_step, (step + 1) * per_step):
        epoch, offset = divmod(pos, num_tasks)
        if epoch not in perms:
            perm = list(range(num_tasks))
            _rng("tasks", seed, epoch).shuffle(perm)
            perms[epoch] = perm
        out.append((perms[epoch][offset], epoch))
    return out


def space_harness(space: SpaceSpec, task_id: str, occasion: int) -> str:
    """The white-box configuration a task runs under on its `occasion`-th draw."""
    from harnessrl.scaling import harness_name, occasion_code

    return harness_name(occasion_code(space.codes, space.k, space.pairing, space.seed, task_id, occasion))


def harnesses_for(spec: ScheduleSpec, step: int, position: int) -> list[str]:
    """The harnesses the task at `position` of `step` runs under, in the order of `spec.harnesses`."""
    k = spec.harnesses_per_task
    if k == 0 or k >= len(spec.harnesses):
        return list(spec.harnesses)
    chosen = set(_rng("harness", spec.seed, step, position).sample(range(len(spec.harnesses)), k))
    return [h for i, h in enumerate(spec.harnesses) if i in chosen]


def rollout_id(step: int, task: Task, harness: str, member: int) -> str:
    """A rollout id that is unique across the run and usable as a folder name (its step reads back
    with `formats.rollout_dir.rollout_step`)."""
    return f"s{step:06d}-{task.id}-{harness.replace(':', '_').replace('/', '_')}-{member}"


def schedule_step(tasks: Sequence[Task], spec: ScheduleSpec, step: int) -> list[RolloutJob]:
    """All rollouts of `step`: per drawn task, per chosen harness, `group_size` members of one group."""
    if not spec.harnesses and spec.space is None:
        raise ValueError("no harnesses to schedule")
    jobs: list[RolloutJob] = []
    members: dict[str, int] = {}
    draws = task_draws(len(tasks), step, spec.tasks_per_step, spec.seed)
    for position, (index, epoch) in enumerate(draws):
        task = tasks[index]
        if spec.space is not None:
            names, options = [space_harness(spec.space, task.id, epoch)], spec.space.options
        else:
            names, options = harnesses_for(spec, step, position), {}
        for harness in names:
            gid = group_id(task.id, harness)
            first = members.get(gid, 0)  # a task drawn twice (at an epoch boundary): one bigger group
            members[gid] = first + spec.group_size
            opts = dict(options or spec.options.get(harness, {}))
            jobs += [
                RolloutJob(task, harness, rollout_id(step, task, harness, m), group_id=gid, options=opts)
                for m in range(first, first + spec.group_size)
            ]
    return jobs
