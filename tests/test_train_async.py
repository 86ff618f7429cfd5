"""Asynchronous rollouts (`train.max_off_policy_steps`): the producer's bound, staleness per rollout,
the bound's drop / keep, and the loop end to end with real sandboxes, the real proxy, the scripted
engine scoring with a tiny Qwen3 (real log-probs, weights pushed after every step) and the real Trainer.

The harness is the `shell` adapter running curl (one model call through the sandbox's only way out),
scored from the rollout's session token, so every GRPO group has reward variance and every step trains.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

from harnessrl.chat.format import ChatFormat
from harnessrl.config import Config
from harnessrl.engines.models import load_model, load_tokenizer
from harnessrl.engines.scripted import ScriptedEngine
from harnessrl.formats.calls import read_calls
from harnessrl.rollout.producer import StepProducer
from harnessrl.rollout.testing import SCORE_FROM_KEY, checked_task, curl_call
from harnessrl.train.build import build_trainer
from harnessrl.train.loop import TrainLoop, train
from harnessrl.train.staleness import apply_bound, staleness
from harnessrl.train.trainer import Trainer
from harnessrl.types import ModelCall, Rollout, RolloutStatus

torch.set_num_threads(1)
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

CURL = f"{curl_call(max_tokens=8)} && {SCORE_FROM_KEY}"
TASKS = [checked_task(f"t{i}", "write a score") for i in range(2)]


def make_cfg(out: Path, model: str = "tiny-qwen3", **train: Any) -> Config:
    base: dict[str, Any] = {
        "lr": 1e-2,
        "steps": 3,
        "seed": 1,
        "out_dir": str(out),
        "tasks_per_step": 1,
        "group_size": 2,
        "harnesses": ["shell"],
        "harness_options": {"shell": {"command": CURL}},
    }
    base.update(train)
    return Config.model_validate(
        {
            "engine": {"type": "scripted", "model": model, "sampling": {"max_tokens": 8}},
            "rollout": {"concurrency": 8, "timeout_s": 60.0},
            "train": base,
        }
    )


def scoring_engine(model: str = "tiny-qwen3") -> ScriptedEngine:
    """Replays "hi there" and scores it with its own float32 copy of the policy (real log-probs)."""
    fmt = ChatFormat(load_tokenizer(model))
    return ScriptedEngine(fmt, ["hi there"], model=load_model(model, "float32", "cpu"))


def call(rid: str, index: int, version: int | None) -> ModelCall:
    return ModelCall(
        call_id=f"{rid}-{index}",
        rollout_id=rid,
        index=index,
        dialect="openai_chat",
        prompt_ids=[1, 2],
        output_ids=[3],
        output_logprobs=[-0.1],
        weights_version=version,
    )


def rollout(rid: str, *versions: int | None, status: RolloutStatus = RolloutStatus.OK) -> Rollout:
    r = Rollout(rollout_id=rid, task_id="t", harness="h", group_id="t/h", reward=1.0, status=status)
    r.calls = [call(rid, i, v) for i, v in enumerate(versions)]
    return r


def test_staleness_is_the_oldest_call_and_the_bound_drops_or_keeps() -> None:
    rs = [
        rollout("fresh", 5, 5),
        rollout("straddles", 3, 4, 5),
        rollout("old", 2),
        rollout("unknown", None),
        rollout("old-timeout", 1, status=RolloutStatus.TIMEOUT),
    ]
    assert [staleness(r, 5) for r in rs] == [0, 2, 3, None, 4]
    assert staleness(rs[0], None) is None
    kept, report = apply_bound(rs, 5, 2, "drop")
    # an infrastructure timeout is never trained, so it is left as it is ...
    assert [r.status_label for r in kept] == ["ok", "ok", "filtered:stale", "ok", "timeout"]
    assert rs[2].status is RolloutStatus.OK  # a copy was labelled, not the caller's record
    assert report.dropped == 1
    # ... but one the policy caused would be trained with reward 0: the bound holds for it too
    rs[4].fault, rs[4].status_reason = "policy", "ran past 300 s"
    kept, _ = apply_bound(rs, 5, 2, "drop", ["timeout", "harness_error"])
    assert kept[4].status_label == "filtered:stale" and rs[4].status is RolloutStatus.TIMEOUT
    kept, _ = apply_bound(rs, 5, 2, "drop", ["harness_error"])  # timeouts are not trained: left alone
    assert kept[4].status_label == "timeout"
    rs[4].fault, rs[4].status_reason = None, ""
    summary = report.summary(["fresh", "straddles"])
    assert summary == {
        "bound": 2,
        "policy": "drop",
        "max": 4,
        "mean": 9 / 4,
        "counts": {"0": 1, "2": 1, "3": 1, "4": 1},
        "unknown": 1,
        "dropped": 1,
        "trained": {"fresh": 0, "straddles": 2},
    }
    same, report = apply_bound(rs, 5, 2, "keep")
    assert [r.status_label for r in same] == ["ok", "ok", "ok", "ok", "timeout"] and report.dropped == 0


async def test_producer_runs_at_most_lag_steps_ahead() -> None:
    """Which steps had started when each step was handed to the trainer, for lag 0, 1 and 2."""
    for lag in (0, 1, 2):
        started: list[int] = []
        release: dict[int, asyncio.Event] = {s: asyncio.Event() for s in range(5)}

        async def run(step: int, started: list[int] = started) -> list[Rollout]:
            started.append(step)
            return [rollout(f"s{step}", step)]

        seen: list[list[int]] = []
        async with StepProducer(run, start=0, stop=5, lag=lag) as producer:
            for step in range(5):
                done = await producer.rollouts(step)
                assert [r.rollout_id for r in done.rollouts] == [f"s{step}"] and done.step == step
                for _ in range(5):  # let the producer start whatever the bound allows
                    await asyncio.sleep(0)
                seen.append(sorted(started))
                release[step].set()
                await producer.trained(step)
        assert seen == [list(range(min(5, s + lag + 1))) for s in range(5)], lag


async def test_producer_close_cancels_steps_nobody_trains() -> None:
    cancelled: list[int] = []

    async def run(step: int) -> list[Rollout]:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append(step)
            raise
        return []

    async with StepProducer(run, start=2, stop=6, lag=1) as producer:
        for _ in range(5):
            await asyncio.sleep(0)
        with pytest.raises(ValueError, match=r"outside 2\.\.5"):
            await producer.rollouts(1)
    assert sorted(cancelled) == [2, 3]


def run_loop(cfg: Config) -> tuple[list[dict[str, Any]], list[Rollout]]:
    engine = scoring_engine()
    records = asyncio.run(TrainLoop(cfg, TASKS, build_trainer(cfg), engine, echo=lambda _: None).run())
    rollouts = []
    for d in sorted(Path(cfg.train.out_dir, "rollouts").iterdir()):
        r = Rollout.model_validate_json((d / "rollout.json").read_text())
        r.calls = read_calls(d / "calls.jsonl")
        rollouts.append(r)
    return records, rollouts


@needs_bwrap
def test_async_bound_one_trains_what_sync_trains_and_respects_the_bound(tmp_path: Path) -> None:
    sync, sync_rollouts = run_loop(make_cfg(tmp_path / "sync"))
    lagged, lagged_rollouts = run_loop(make_cfg(tmp_path / "async", max_off_policy_steps=1))
    for records in (sync, lagged):
        assert [r["step"] for r in records] == [0, 1, 2]
        assert [r["status"] for r in records] == [{"ok": 2}] * 3  # none lost
        assert [r["trained_rollouts"] for r in records] == [2, 2, 2]
        assert [r["optimizer_step"] for r in records] == [1, 2, 3]
        assert [r["weights_version"] for r in records] == [1, 2, 3]
        assert all(r["staleness"]["dropped"] == 0 and r["staleness"]["unknown"] == 0 for r in records)
        assert all(len(r["staleness"]["trained"]) == 2 for r in records)
    # Synchronous: every rollout sampled with the trainer's weights; the sampling log-probs match.
    assert all(r["staleness"]["counts"] == {"0": 2} for r in sync)
    assert all(r["trainer"]["mismatch/abs_max"] < 1e-4 for r in sync)
    # Bound 1: never older than one version; where a rollout was stale, the trainer saw the gap
    # between its weights and the recorded behaviour log-probs (what the truncated IS corrects).
    for r in lagged:
        assert r["staleness"]["max"] <= 1 and r["staleness"]["bound"] == 1
        if r["staleness"]["max"] == 1:
            assert r["trainer"]["mismatch/abs_max"] > 1e-6
        else:
            assert r["trainer"]["mismatch/abs_max"] < 1e-4
    # Step 0's rollouts all sampled with version 0 in both runs; every call carries its version.
    for rollouts in (sync_rollouts, lagged_rollouts):
        assert len(rollouts) == 6 and all(len(r.calls) == 1 for r in rollouts)
        assert {r.calls[0].weights_version for r in rollouts if r.rollout_id.startswith("s000000-")} == {0}
    by_step = {s: [r for r in lagged_rollouts if r.rollout_id.startswith(f"s{s:06d}-")] for s in range(3)}
    for step, rs in by_step.items():  # started after step - 2 was trained, done before step trained
        assert all(max(0, step - 1) <= (r.calls[0].weights_version or 0) <= step for r in rs)
    # Overlap: step 1 began before step 0's rollouts were done (never in the synchronous loop).
    sync_by_step = {s: [r for r in sync_rollouts if r.rollout_id.startswith(f"s{s:06d}-")] for s in range(3)}
    assert min(r.started_at for r in sync_by_step[1]) >= max(r.ended_at for r in sync_by_step[0])
    assert min(r.started_at for r in by_step[1]) < max(r.ended_at for r in by_step[0])
    logged = [json.loads(x) for x in (tmp_path / "async" / "metrics.jsonl").read_text().splitlines()]
    assert [x["staleness"] for x in logged] == [r["staleness"] for r in lagged]


class ProbeTrainer(Trainer):
    """A real Trainer whose step says it has begun, then waits for an event only the event loop sets."""

    entered = threading.Event()
    gate = threading.Event()

    def step(self, *args: Any, **kwargs: Any) -> dict[str, float]:
        self.entered.set()
        assert self.gate.wait(20), "the event loop stood still while the trainer stepped"
        return super().step(*args, **kwargs)


@needs_bwrap
async def test_the_trainer_steps_off_the_event_loop(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path / "run", steps=1)
    plain = build_trainer(cfg)
    trainer = ProbeTrainer(plain.model, plain.cfg)
    ProbeTrainer.entered.clear()
    ProbeTrainer.gate.clear()

    async def open_gate() -> None:  # runs only if the loop is free while the step is in progress
        while not ProbeTrainer.entered.is_set():
            await asyncio.sleep(0.01)
        ProbeTrainer.gate.set()

    opener = asyncio.create_task(open_gate())
    loop = TrainLoop(cfg, TASKS, trainer, scoring_engine(), echo=lambda _: None)
    (record,) = await loop.run()
    await opener
    assert record["trained"] is True and record["status"] == {"ok": 2}


@pytest.mark.slow
@needs_bwrap
def test_async_on_smollm2_samples_from_the_policy_and_respects_the_bound(tmp_path: Path) -> None:
    """The embedded hf engine on SmolLM2-135M sampling while its trainer copy updates (bound 1)."""
    cfg = make_cfg(tmp_path / "run", max_off_policy_steps=1, steps=3, lr=1e-5)
    cfg = cfg.model_copy(
        update={"engine": cfg.engine.model_copy(update={"type": "hf", "model": "default", "max_batch": 4})}
    )
    records = asyncio.run(train(cfg, TASKS, echo=lambda _: None))
    assert [r["status"] for r in records] == [{"ok": 2}] * 3
    assert [r["trained_rollouts"] for r in records] == [2, 2, 2]
    assert [r["weights_version"] for r in records] == [1, 2, 3]
    assert all(r["staleness"]["max"] <= 1 and r["staleness"]["unknown"] == 0 for r in records)
    assert records[0]["staleness"]["counts"] == {"0": 2}
    for r in records:  # sampled log-probs agree with the trainer's exactly when nothing was stale
        if r["staleness"]["max"] == 0:
            assert r["trainer"]["mismatch/abs_max"] < 1e-3
