"""Dynamic sampling (DAPO, Yu et al. 2025): every GRPO group a step trains carries signal.

    rollouts, stats = await fill(first_rollouts, run, tasks, spec, step, rounds=3, trains=trains)

A GRPO group whose trainable rollouts all got the same reward (all solved, or all failed) has zero
advantage: its rollouts cost their time and teach nothing (in the quickstart's RL stage, 22 of 36
groups). With `train.dynamic_sampling_rounds = n > 0`, once a step's scheduled rollouts are done:

    target      the number of groups the schedule made (`tasks_per_step` x harnesses per task)
    round r     every group without reward variance that the previous round left (the schedule's
                own groups in round 1) is replaced by a group of a task the step has not run yet,
                under the same harness (harness scaling: the new task's configuration for the step's
                epoch); the new groups run concurrently
    stop        when the step holds `target` informative groups, after n rounds (tries exhausted),
                or when every task has been run in this step
    train       the informative groups; the others are dropped, their trainable rollouts labelled
                `filtered:zero_variance` (the step's `status` counts), and never pushed down

Which tasks replace them is a pure function of (seed, step, round), like the schedule, so a resumed
step draws the same ones. A group is informative when at least `min_size` of its rollouts train
(`ok`, or a failure the policy caused that `train.failures` trains with reward 0) and their
rewards are not all equal. The step's metrics count it (`groups` in the metrics line):
`informative` (also without dynamic sampling), `resampled` (replacement groups run), `rounds`,
`exhausted` (1 when the step ended short of `target`) and `dropped_zero_variance`.

Left out: DAPO's over-sampling of the first batch (a step starts with exactly the scheduled groups).
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from harnessrl.rollout.runner import RolloutJob
from harnessrl.train.schedule import ScheduleSpec, rollout_id, space_harness
from harnessrl.types import Rollout, RolloutStatus, Task, group_id


@dataclass
class Fill:
    """What dynamic sampling did in one step (module docstring)."""

    target: int = 0
    informative: int = 0
    resampled: int = 0
    rounds: int = 0
    exhausted: bool = False
    uninformative: set[str] = field(default_factory=set)
    """Group ids without reward variance: not trained."""

    def counts(self) -> dict[str, int]:
        return {
            "informative": self.informative,
            "resampled": self.resampled,
            "rounds": self.rounds,
            "exhausted": int(self.exhausted),
        }


def trained_reward(r: Rollout, trains: Callable[[Rollout], bool]) -> float | None:
    """The reward a rollout would train with: its reward when ok, 0 for a failure `trains` accepts."""
    if r.status is RolloutStatus.OK and r.reward is not None:
        return float(r.reward)
    return 0.0 if r.status is not RolloutStatus.OK and trains(r) else None


def informative_groups(
    rollouts: Sequence[Rollout], trains: Callable[[Rollout], bool], min_size: int = 2
) -> dict[str, bool]:
    """group id -> whether its trainable rewards vary (module docstring), in first-seen order."""
    rewards: dict[str, list[float]] = {}
    for r in rollouts:
        values = rewards.setdefault(r.group_id, [])  # also a group with nothing trainable
        value = trained_reward(r, trains)
        if value is not None:
            values.append(value)
    return {g: len(v) >= max(min_size, 2) and max(v) != min(v) for g, v in rewards.items()}


def replacement_jobs(
    tasks: Sequence[Task], spec: ScheduleSpec, step: int, round_: int, used: set[str], harnesses: list[str]
) -> list[RolloutJob]:
    """One group of `spec.group_size` rollouts per entry of `harnesses`, each on a task not in `used`
    (drawn by (seed, step, round)); fewer when the tasks run out."""
    fresh = [t for t in tasks if t.id not in used]
    random.Random(f"resample/{spec.seed}/{step}/{round_}").shuffle(fresh)
    epoch = step * spec.tasks_per_step // max(len(tasks), 1)
    jobs: list[RolloutJob] = []
    for task, old in zip(fresh, harnesses, strict=False):
        harness = old if spec.space is None else space_harness(spec.space, task.id, epoch)
        options = dict(spec.space.options if spec.space is not None else spec.options.get(harness, {}))
        gid = group_id(task.id, harness)
        jobs += [
            RolloutJob(task, harness, rollout_id(step, task, harness, m), group_id=gid, options=options)
            for m in range(spec.group_size)
        ]
    return jobs


async def fill(
    first: Sequence[Rollout],
    run: Callable[[list[RolloutJob], int], Awaitable[list[Rollout]]],
    tasks: Sequence[Task],
    spec: ScheduleSpec,
    step: int,
    *,
    rounds: int,
    trains: Callable[[Rollout], bool],
    min_size: int = 2,
) -> tuple[list[Rollout], Fill]:
    """The step's rollouts after up to `rounds` rounds of replacing groups without reward variance
    (`run(jobs, round)` runs a round's jobs); see the module docstring."""
    rollouts = list(first)
    status = informative_groups(rollouts, trains, min_size)
    out = Fill(target=len(status))
    pending = [g for g, ok in status.items() if not ok]
    used = {r.task_id for r in rollouts}
    harness_of = {r.group_id: r.harness for r in rollouts}
    while pending and out.rounds < rounds:
        jobs = replacement_jobs(tasks, spec, step, out.rounds + 1, used, [harness_of[g] for g in pending])
        if not jobs:
            break
        out.rounds += 1
        new = await run(jobs, out.rounds)
        used |= {j.task.id for j in jobs}
        harness_of |= {r.group_id: r.harness for r in new}
        out.resampled += len({j.group_id for j in jobs})
        rollouts += new
        fresh = informative_groups(new, trains, min_size)
        status |= fresh
        pending = [g for g, ok in fresh.items() if not ok]
    out.informative = sum(status.values())
    out.exhausted = out.informative < out.target
    out.uninformative = {g for g, ok in status.items() if not ok}
    return rollouts, out
