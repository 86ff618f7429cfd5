"""Dynamic sampling (`train.dynamic_sampling_rounds`, `train/dynamic.py`): groups without reward variance
replaced by other tasks' groups, exact counts.

`fill` is driven by a plain function that turns jobs into Rollout records (flat tasks: every member
scores 1.0; varied tasks: members score 0.0, 1.0, ...), so the draw order and the counts are exact;
then the loop end to end: real sandboxes, the real proxy, the scripted engine scoring with a tiny Qwen3
(real log-probs) and the real Trainer, the `shell` harness running curl and scoring from the rollout's
session token (varied) unless the task's prompt says "flat" (0 for every member).
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from support import small_train_config

from harnessrl.config import Config, ConfigError
from harnessrl.rollout.runner import RolloutJob
from harnessrl.rollout.testing import SCORE_FROM_KEY, checked_task, curl_call
from harnessrl.train.build import build_trainer
from harnessrl.train.dynamic import fill, informative_groups
from harnessrl.train.loop import TrainLoop
from harnessrl.train.schedule import ScheduleSpec, schedule_step
from harnessrl.types import Rollout, RolloutStatus, Task

torch.set_num_threads(1)
S = RolloutStatus


def task(i: int, kind: str) -> Task:
    return Task(id=f"t{i}", prompt=f"{kind} task")


def outcome(job: RolloutJob) -> Rollout:
    member = int(job.rollout_id.rsplit("-", 1)[1])
    reward = 1.0 if job.task.prompt.startswith("flat") else float(member % 2)
    return Rollout(
        rollout_id=job.rollout_id,
        task_id=job.task.id,
        harness=job.harness,
        group_id=job.group_id,
        reward=reward,
    )


class Runs:
    """Runs a round's jobs as `outcome` says and remembers which tasks each round ran."""

    def __init__(self) -> None:
        self.rounds: list[list[str]] = []

    async def __call__(self, jobs: list[RolloutJob], round_: int) -> list[Rollout]:
        assert round_ == len(self.rounds) + 1
        self.rounds.append(sorted({j.task.id for j in jobs}))
        return [outcome(j) for j in jobs]


def never(_: Rollout) -> bool:
    return False


async def run_fill(tasks: list[Task], spec: ScheduleSpec, rounds: int) -> tuple[list[str], Runs, Any, Any]:
    first = [outcome(j) for j in schedule_step(tasks, spec, 0)]
    runs = Runs()
    rollouts, done = await fill(first, runs, tasks, spec, 0, rounds=rounds, trains=never)
    return sorted({r.task_id for r in first}), runs, rollouts, done


async def test_fill_replaces_flat_groups_until_the_step_is_full() -> None:
    # t3, t5 varied; seed 0 schedules t3 (varied) and t4 (flat); round 1 draws t2 (flat), round 2 t5
    tasks = [task(i, "varied" if i in (3, 5) else "flat") for i in range(6)]
    spec = ScheduleSpec(harnesses=("h",), tasks_per_step=2, group_size=2, seed=0)
    first, runs, rollouts, done = await run_fill(tasks, spec, rounds=3)
    assert first == ["t3", "t4"] and runs.rounds == [["t2"], ["t5"]]
    assert (done.target, done.informative, done.resampled, done.rounds, done.exhausted) == (2, 2, 2, 2, False)
    assert done.uninformative == {"t4/h", "t2/h"} and len(rollouts) == 8
    assert done.counts() == {"informative": 2, "resampled": 2, "rounds": 2, "exhausted": 0}
    # the same step draws the same replacements (a pure function of seed, step, round)
    again = await run_fill(tasks, spec, rounds=3)
    assert again[1].rounds == runs.rounds


async def test_fill_stops_at_its_bound_and_when_the_tasks_run_out() -> None:
    flat = [task(i, "flat") for i in range(10)]
    spec = ScheduleSpec(harnesses=("h",), tasks_per_step=2, group_size=2, seed=0)
    _, runs, rollouts, done = await run_fill(flat, spec, rounds=2)  # 2 rounds of 2 replacements
    assert [len(r) for r in runs.rounds] == [2, 2] and len(rollouts) == 12
    assert (done.target, done.informative, done.resampled, done.rounds, done.exhausted) == (2, 0, 4, 2, True)
    # 3 tasks, 2 scheduled: round 1 has one task for two flat groups, round 2 none: exhausted
    _, runs, rollouts, done = await run_fill(flat[:3], spec, rounds=5)
    assert [len(r) for r in runs.rounds] == [1] and len(rollouts) == 6
    assert (done.informative, done.resampled, done.rounds, done.exhausted) == (0, 1, 1, True)
    _, runs, _, done = await run_fill(flat, spec, rounds=0)  # off: nothing runs
    assert runs.rounds == [] and (done.resampled, done.exhausted) == (0, True)


def test_informative_counts_what_would_train() -> None:
    def r(
        rid: str, group: str, status: RolloutStatus, fault: str = "", reward: float | None = 1.0
    ) -> Rollout:
        return Rollout(
            rollout_id=rid,
            task_id=group,
            harness="h",
            group_id=group,
            status=status,
            fault=fault,
            reward=reward,
        )

    rollouts = [
        r("a0", "a", S.OK), r("a1", "a", S.HARNESS_ERROR, "policy"),   # 1 vs a failure trained as 0
        r("b0", "b", S.OK), r("b1", "b", S.SANDBOX_ERROR, "infra"),    # one trainable rollout: no signal
        r("c0", "c", S.OK, reward=0.5), r("c1", "c", S.OK, reward=0.5),  # all equal
        r("d0", "d", S.ENGINE_ERROR, "infra"),                          # nothing trainable
    ]  # fmt: skip

    def trains(x: Rollout) -> bool:
        return x.fault == "policy"

    assert informative_groups(rollouts, trains) == {"a": True, "b": False, "c": False, "d": False}
    assert informative_groups(rollouts, never) == {"a": False, "b": False, "c": False, "d": False}


CURL = (
    f"{curl_call(max_tokens=8)} && "
    f'case "$HARNESSRL_PROMPT" in flat*) echo 00000000 > score.txt;; *) {SCORE_FROM_KEY};; esac'
)


def real_task(i: int, kind: str) -> Task:
    return checked_task(f"t{i}", f"{kind}: write a score")


def make_cfg(out: Path, **train: Any) -> Config:
    engine = {"type": "scripted", "model": "tiny-qwen3", "sampling": {"max_tokens": 8}}
    base = {"seed": 0, "harnesses": ["shell"], "harness_options": {"shell": {"command": CURL}}}
    base["dynamic_sampling_rounds"] = 3
    return small_train_config(out, engine, {"concurrency": 8, "timeout_s": 60.0}, **(base | train))


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
def test_loop_with_dynamic_sampling_trains_only_informative_groups(tmp_path: Path) -> None:
    from harnessrl.chat.format import ChatFormat
    from harnessrl.engines.models import load_model, load_tokenizer
    from harnessrl.engines.scripted import ScriptedEngine

    tasks = [real_task(i, "varied" if i in (3, 5) else "flat") for i in range(6)]  # as in the first test
    cfg = make_cfg(tmp_path / "run")
    fmt = ChatFormat(load_tokenizer("tiny-qwen3"))
    engine = ScriptedEngine(fmt, ["hi there"], model=load_model("tiny-qwen3", "float32", "cpu"))
    lines: list[str] = []
    (rec,) = asyncio.run(TrainLoop(cfg, tasks, build_trainer(cfg), engine, echo=lines.append).run())
    # scheduled t3 (varied) + t4 (flat); round 1: t2 (flat), round 2: t5 (varied): full after 2 rounds
    assert rec["rollouts"] == 8
    assert rec["status"] == {"filtered:zero_variance": 4, "ok": 4}
    assert rec["trained"] is True and rec["trained_rollouts"] == 4
    assert rec["groups"] == {
        "scheduled": 4, "trained": 2, "zero_variance": 0, "dropped_small": 0, "informative": 2,
        "resampled": 2, "rounds": 2, "exhausted": 0, "dropped_zero_variance": 4,
    }  # fmt: skip
    ran = sorted(p.name for p in (tmp_path / "run" / "rollouts").iterdir())
    assert sorted({name.split("-")[1] for name in ran}) == ["t2", "t3", "t4", "t5"]
    assert "(zero-var 0, informative 2, resampled 2)" in lines[-1]
    logged = json.loads((tmp_path / "run" / "metrics.jsonl").read_text())
    assert logged["groups"]["resampled"] == 2

    # without it the same step trains the scheduled groups, t4's without signal, and counts it
    off = make_cfg(tmp_path / "off", dynamic_sampling_rounds=0)
    (plain,) = asyncio.run(TrainLoop(off, tasks, build_trainer(off), engine, echo=lambda _: None).run())
    assert plain["rollouts"] == 4 and plain["status"] == {"ok": 4}
    assert plain["groups"] == {
        "scheduled": 2, "trained": 2, "zero_variance": 1, "dropped_small": 0, "informative": 1,
        "resampled": 0, "rounds": 0, "exhausted": 0, "dropped_zero_variance": 0,
    }  # fmt: skip


def test_dynamic_sampling_needs_grpo(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path, algorithm="ppo")
    with pytest.raises(ConfigError, match="grouped algorithm"):
        TrainLoop(cfg, [real_task(0, "flat")], None, None)  # type: ignore[arg-type]


async def test_fill_under_harness_scaling_gives_the_new_task_its_own_configuration() -> None:
    from harnessrl.scaling import orthogonal_array
    from harnessrl.train.schedule import SpaceSpec, space_harness

    tasks = [task(i, "flat") for i in range(4)]
    space = SpaceSpec(codes=tuple(orthogonal_array()), k=2, seed=0)
    spec = ScheduleSpec(harnesses=(), tasks_per_step=1, group_size=2, seed=0, space=space)
    first = [outcome(j) for j in schedule_step(tasks, spec, 0)]
    runs = Runs()
    rollouts, done = await fill(first, runs, tasks, spec, 0, rounds=1, trains=never)
    (new,) = {(r.task_id, r.harness, r.group_id) for r in rollouts[len(first) :]}
    assert new[1] == space_harness(space, new[0], 0) and new[2] == f"{new[0]}/{new[1]}"
    assert new[0] != first[0].task_id and (done.resampled, done.exhausted) == (1, True)
