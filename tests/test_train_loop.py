"""The training loop end to end: real bubblewrap sandboxes, the real proxy on a real port, the embedded
hf engine on the tiny random Qwen3 (real Qwen3 tokenizer), real checkers, the real Trainer.

The "harness" is the `shell` adapter running curl: one model call through the sandbox's only way out,
then a score file derived from the rollout's session token (distinct per rollout, so GRPO groups have
reward variance without depending on what the random model says). A second shell adapter registered as
`shell-b` scores a constant 0 (a zero-variance group) and crashes on tasks whose prompt says "crash".
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError
from support import small_train_config
from test_train_engine import two_call_rollout  # the same two calls, on Qwen3 token ids

from harnessrl.config import Config, ConfigError, TraceConfig
from harnessrl.engines import build_engine
from harnessrl.engines.hf import HFEngine
from harnessrl.formats.rollout_dir import rollout_step
from harnessrl.harnesses.registry import HARNESSES
from harnessrl.harnesses.shell import Shell
from harnessrl.report.tbevents import read_scalars
from harnessrl.rl.packing import layout_tree
from harnessrl.rollout.session import RolloutStack
from harnessrl.rollout.testing import SCORE_FROM_KEY, checked_task, curl_call
from harnessrl.train.batch import collect_trees
from harnessrl.train.build import build_trainer, trainer_config
from harnessrl.train.loop import TrainLoop
from harnessrl.train.schedule import ScheduleSpec, schedule_step
from harnessrl.train.trainer import Trainer
from harnessrl.types import ModelCall, Rollout, RolloutStatus

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")
torch.set_num_threads(1)

CURL = curl_call(max_tokens=6)
VARIED = f"{CURL} && {SCORE_FROM_KEY}"
CONSTANT = f'{CURL} && case "$HARNESSRL_PROMPT" in *crash*) exit 3;; esac; echo 00000000 > score.txt'
TASKS = [checked_task("t0", "write a score"), checked_task("t1", "crash after the call")]


def make_cfg(out: Path, **train: Any) -> Config:
    engine = {"type": "hf", "model": "tiny-qwen3", "max_batch": 8, "sampling": {"max_tokens": 6}}
    options = {"shell": {"command": VARIED}, "shell-b": {"command": CONSTANT}}
    base = {"seed": 3, "harnesses": ["shell", "shell-b"], "harness_options": options}
    return small_train_config(out, engine, {"concurrency": 4, "timeout_s": 60.0}, **(base | train))


@pytest.fixture(autouse=True)
def shell_b(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(HARNESSES, "shell-b", Shell())


def snapshot(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in trainer.weights().items()}


async def engine_vs_trainer_gap(engine: HFEngine, trainer: Trainer) -> float:
    """Largest |engine sampling log-prob - trainer log-prob| over a fresh two-call rollout."""
    prompt = (151644, 872, 198, 14990, 151645, 198, 151644, 77091, 198)
    env = (151645, 198, 151644, 872, 198)
    layout = layout_tree(await two_call_rollout(engine, 1.0, 5, prompt, env, max_tokens=8))
    ours = trainer.logprobs([layout])[0]
    mask = layout.loss_mask
    return float((ours[mask] - layout.rollout_logprobs[mask]).abs().max())


async def test_one_full_step(tmp_path: Path) -> None:
    cfg = make_cfg(tmp_path / "run")
    trainer = build_trainer(cfg)
    engine = build_engine(cfg.engine)
    assert isinstance(engine, HFEngine)
    before = snapshot(trainer)
    lines: list[str] = []
    loop = TrainLoop(cfg, TASKS, trainer, engine, echo=lines.append)
    loop.out_dir.mkdir(parents=True)
    async with RolloutStack.from_config(loop.rollout_config(), TASKS, engine=engine) as stack:
        assert stack.runner is not None
        assert await engine_vs_trainer_gap(engine, trainer) < 1e-4  # same weights to begin with
        rec = await loop.run_step(stack.runner, 0)

        # One optimizer step moved the trainer; the engine got exactly the new weights.
        after = trainer.weights()
        assert any(not torch.equal(before[k], after[k]) for k in before)
        assert engine.weights_version == 1
        engine_state = engine.model.state_dict()
        assert all(torch.equal(engine_state[k], v) for k, v in after.items())
        assert await engine_vs_trainer_gap(engine, trainer) < 1e-4
        assert await engine_vs_trainer_gap(engine, build_trainer(cfg)) > 1e-3  # the policy did move

    # 2 tasks x 2 harnesses x 2 rollouts; t1 crashes under shell-b after its model call: the
    # policy's doing, trained with reward 0 (train.failures, default) and counted as such.
    assert rec["rollouts"] == 8
    assert rec["status"] == {"harness_error": 2, "ok": 6}
    assert rec["trained"] is True and rec["skip_reason"] is None
    assert rec["trained_rollouts"] == 8 and rec["failures_trained"] == {"harness_error": 2}
    assert rec["trained_by_harness"] == {"shell": 4, "shell-b": 4}
    assert rec["groups"] == {
        "scheduled": 4, "trained": 4, "zero_variance": 2, "dropped_small": 0,
        # informative: the two shell groups (shell-b scores a constant 0); no dynamic sampling
        "informative": 2, "resampled": 0, "rounds": 0, "exhausted": 0, "dropped_zero_variance": 0,
    }  # fmt: skip
    assert rec["optimizer_step"] == 1 and rec["weights_version"] == 1
    assert rec["reward"]["n"] == 6 and rec["reward"]["by_harness"]["shell-b"] == 0.0
    assert 0.0 < rec["reward"]["by_harness"]["shell"] < 1.0
    tree = rec["tree"]
    assert tree["calls"] == 8 and tree["live_leaves"] == 8 and tree["dead_leaves"] == 0
    assert 0 < tree["model_tokens_kept"] <= 8 * 6
    assert tree["tokens_unique"] == tree["tokens_paths"] == tree["tokens_per_call"]  # one call per rollout
    assert tree["segments_by_kind"] == tree["rollouts_with_segment"] == {"main": 8}
    t = rec["trainer"]
    assert t["trained_tokens"] == tree["model_tokens_kept"]
    assert t["mismatch/abs_max"] < 1e-4  # the engine sampled with the trainer's weights
    assert set(rec["time"]) == {
        "rollouts",
        "trees",
        "advantages",
        "train",
        "weights",
        "checkpoint",
        "step",
        "rollouts_ran",
    }

    logged = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert logged == [json.loads(json.dumps(rec))]
    out = rec["outcomes"]  # train/metrics.py: no shell reward reaches 1.0; every rollout made its call
    assert (out["passed"], out["pass_rate"], out["calls"]) == (0, 0.0, 8)
    assert out["seconds"]["agent"] > 0 and out["seconds"]["verify"] > 0
    (events,) = (tmp_path / "run" / "tb").iterdir()
    assert read_scalars(events)["status/harness_error"] == [(0, 2.0)]
    assert len(lines) == 1 and lines[0].startswith("step 1/1 | harness_error 2 ok 6 | reward ")
    assert (tmp_path / "run" / "checkpoints" / "step-00000001" / "state.pt").is_file()  # the last step

    # Groups never mix harnesses: every rollout folder's group is its own (task, harness) pair.
    for rdir in sorted((tmp_path / "run" / "rollouts").iterdir()):
        r = json.loads((rdir / "rollout.json").read_text())
        assert r["group_id"] == f"{r['task_id']}/{r['harness']}"


def test_schedule_groups_and_determinism() -> None:
    tasks = [checked_task(f"t{i}", "p") for i in range(5)]
    spec = ScheduleSpec(
        harnesses=("claude-code", "codex", "openclaw"), tasks_per_step=2, group_size=3, seed=7
    )
    jobs = schedule_step(tasks, spec, step=4)
    assert len(jobs) == 2 * 3 * 3
    groups: dict[str, set[str]] = {}
    for job in jobs:
        groups.setdefault(job.group_id, set()).add(job.harness)
        assert job.group_id == f"{job.task.id}/{job.harness}"
    assert all(len(h) == 1 for h in groups.values()) and len(groups) == 6
    assert [j.rollout_id for j in jobs] == [j.rollout_id for j in schedule_step(tasks, spec, step=4)]
    assert {rollout_step(j.rollout_id) for j in jobs} == {4}  # the step reads back from the id
    odd = ("s-t", "x000001-t", "s000001", "sx-t", "s\u00b2-t", "s" + "9" * 5000 + "-t")
    assert rollout_step("s12-t-h-0") == 12 and [rollout_step(x) for x in odd] == [None] * len(odd)
    # Every task comes up once per epoch (5 tasks, 2 per step: steps 0, 1 and half of 2).
    seen = [j.task.id for s in range(5) for j in schedule_step(tasks, spec, s) if j.harness == "codex"]
    assert len(seen) == 5 * 2 * 3
    firsts = seen[::3]
    assert sorted(firsts[:5]) == [f"t{i}" for i in range(5)]
    assert sorted(firsts[5:]) == [f"t{i}" for i in range(5)]
    # An epoch boundary drawing one task twice in a step: one group of twice the size, unique ids.
    two = [checked_task("a", "p"), checked_task("b", "p")]
    small = ScheduleSpec(harnesses=("shell",), tasks_per_step=3, group_size=2, seed=0)
    merged = schedule_step(two, small, step=0)
    sizes: dict[str, int] = {}
    for job in merged:
        sizes[job.group_id] = sizes.get(job.group_id, 0) + 1
    assert sorted(sizes.values()) == [2, 4] and len({j.rollout_id for j in merged}) == 6
    one = ScheduleSpec(harnesses=("claude-code", "codex", "openclaw"), harnesses_per_task=1, seed=7)
    picked = [len({j.harness for j in schedule_step(tasks, one, s)}) for s in range(6)]
    assert all(1 <= n <= 2 for n in picked) and any(n == 2 for n in picked)


def test_trainer_config_takes_run_settings() -> None:
    cfg = make_cfg(Path("unused"), algorithm="ppo")
    tc = trainer_config(cfg)
    assert (tc.lr, tc.seed, tc.temperature, tc.total_steps, tc.value) == (1e-2, 3, 1.0, 1, "head")
    bad = make_cfg(Path("unused"), trainer={"lr": 0.5})
    with pytest.raises(ConfigError, match=r"set train\.lr, not train\.trainer\.lr"):
        trainer_config(bad)


async def test_checkpoint_and_resume(tmp_path: Path) -> None:
    out = tmp_path / "run"
    cfg = make_cfg(out, steps=2, save_every=1, tasks_per_step=1, harnesses=["shell"])
    first = TrainLoop(cfg, TASKS, build_trainer(cfg), build_engine(cfg.engine), echo=lambda _: None)
    records = await first.run()
    assert [r["step"] for r in records] == [0, 1]
    assert [r["optimizer_step"] for r in records] == [1, 2]
    ckpts = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert ckpts == ["step-00000001", "step-00000002"]
    step1_rollouts = sorted(p.name for p in (out / "rollouts").iterdir() if p.name.startswith("s000001-"))
    # A kill before the last checkpoint landed: resume must redo step 1 from the step-0 state.
    shutil.rmtree(out / "checkpoints" / "step-00000002")
    shutil.rmtree(out / "rollouts")
    resumed_cfg = cfg.model_copy(update={"train": cfg.train.model_copy(update={"resume": True})})
    trainer = build_trainer(resumed_cfg)
    engine = build_engine(resumed_cfg.engine)
    lines: list[str] = []
    again = TrainLoop(resumed_cfg, TASKS, trainer, engine, echo=lines.append)
    redo = await again.run()
    assert lines[0].startswith("resume: ") and "next step 1" in lines[0]
    assert [r["step"] for r in redo] == [1] and redo[0]["optimizer_step"] == 2
    assert redo[0]["weights_version"] == 2  # the checkpoint's weights, then the redone step's
    assert sorted(p.name for p in (out / "rollouts").iterdir()) == step1_rollouts
    logged = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert logged == [0, 1]


def _call(rid: str, index: int, prompt: list[int], output: list[int]) -> ModelCall:
    return ModelCall(
        call_id=f"{rid}-{index}",
        rollout_id=rid,
        index=index,
        dialect="openai_chat",
        prompt_ids=prompt,
        output_ids=output,
        output_logprobs=[-0.5] * len(output),
    )


def test_collect_trees_counts_every_rollout_and_keeps_only_ok_trees() -> None:
    ok = Rollout(rollout_id="a", task_id="t", harness="h", group_id="t/h", reward=1.0)
    ok.calls = [_call("a", 0, [1, 2, 3], [4, 5]), _call("a", 1, [1, 2, 3, 4, 5, 6], [7])]
    timeout = ok.model_copy(update={"rollout_id": "b", "status": RolloutStatus.TIMEOUT})
    no_calls = Rollout(rollout_id="c", task_id="t", harness="h", group_id="t/h", reward=0.0)
    empty = no_calls.model_copy(update={"rollout_id": "d", "calls": [_call("d", 0, [1, 2], [])]})
    cfg = make_cfg(Path("unused"))
    batch = collect_trees([ok, timeout, no_calls, empty], cfg)
    assert batch.labels == {"ok": 1, "timeout": 1, "filtered:no_trainable_calls": 2}
    (kept,) = batch.trees
    assert (kept.sample.rollout_id, kept.harness, kept.label) == ("a", "h", "ok")
    assert kept.stats["model_tokens_kept"] == 3 and kept.stats["tokens_unique"] == 7
    # Over the leaf bound a rollout is still trained with its reward (never `filtered:over_branching`):
    # the latest call's path is kept, the extra branch dropped and counted.
    failed = ok.model_copy(update={"rollout_id": "e", "reward": 0.0})
    failed.calls = [*ok.calls, _call("e", 2, [1, 2, 3, 4, 5, 9, 7], [8])]  # a branch carrying a-1's output
    strict = cfg.model_copy(update={"trace": cfg.trace.model_copy(update={"max_live_leaves": 1})})
    bounded = collect_trees([failed], strict)
    assert bounded.labels == {"ok": 1}
    (tree,) = bounded.trees
    assert (tree.sample.reward, len(tree.sample.paths), tree.stats["over_branching_dropped"]) == (0.0, 1, 1)
    assert [n.tokens for n in tree.sample.nodes] == [[1, 2, 3, 4, 5], [9, 7, 8]]
    with pytest.raises(ValidationError):
        TraceConfig(max_live_leaves=0)


async def test_ppo_trains_where_grpo_has_no_signal(tmp_path: Path) -> None:
    """A constant reward of 0.5: GRPO skips the step; PPO's value head (zero at first) gives R - V."""
    half = {"shell": {"command": f"{CURL} && echo 80000000 > score.txt"}}
    records = {}
    for algorithm in ("grpo", "ppo"):
        cfg = make_cfg(
            tmp_path / algorithm,
            algorithm=algorithm,
            tasks_per_step=1,
            harnesses=["shell"],
            harness_options=half,
        )
        trainer = build_trainer(cfg)
        loop = TrainLoop(cfg, TASKS[:1], trainer, build_engine(cfg.engine), echo=lambda _: None)
        (records[algorithm],) = await loop.run()
    grpo, ppo = records["grpo"], records["ppo"]
    assert grpo["status"] == ppo["status"] == {"ok": 2}
    assert grpo["trained"] is False and grpo["skip_reason"] == "zero_advantage"
    assert grpo["optimizer_step"] == 0 and grpo["weights_version"] == 0
    assert ppo["trained"] is True and ppo["optimizer_step"] == 1 and ppo["weights_version"] == 1
    assert ppo["reward"]["mean"] == pytest.approx(0x80000000 / 0xFFFFFFFF)
    assert ppo["trainer"]["value/mse"] == pytest.approx(ppo["reward"]["mean"] ** 2, rel=1e-5)
    assert ppo["trainer"]["grad_norm"] > 0.0
