"""Segments through the training loop's own stages, on real white-box rollouts that delegate and compact.

Two rollouts of the bundled warmup task through `whitebox:00020` (compaction context) with
`subagents`, run in real sandboxes against the live proxy by the white-box reference engine (the
first command goes to a helper sub-agent; the context outgrows `compact_tokens` and the agent
summarises and restarts). Rewards are then set to 1 and 0 to give the GRPO group variance, and the
loop's `collect_trees` + `optimize` build the batch under each `train.segments` and advantage mode.
"""

from __future__ import annotations

import shutil
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from batch_golden import batch_record, config

from harnessrl.chat.format import ChatFormat
from harnessrl.config import Config
from harnessrl.engines.models import load_tokenizer
from harnessrl.harnesses.whitebox.reference import ReferenceEngine
from harnessrl.rollout import RolloutJob
from harnessrl.rollout.session import RolloutStack, reference_command
from harnessrl.tasks import load_tasks
from harnessrl.trace import trace_rollout
from harnessrl.types import Rollout

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap not installed")

OPTIONS = {"subagents": True, "compact_tokens": 500, "observation_bytes": 400}


@pytest.fixture(scope="module")
def rollouts(tmp_path_factory: pytest.TempPathFactory) -> list[Rollout]:
    import asyncio

    task = next(t for t in load_tasks("bundled", split="train").tasks if t.id == "task_0000")
    steps = ["ls", "seq 1 1000", reference_command(task), "cat hello.txt"]
    engine = ReferenceEngine(ChatFormat(load_tokenizer("tiny-qwen3")), [(task.prompt, steps)])
    cfg = Config()
    cfg.engine.type, cfg.engine.model = "scripted", "tiny-qwen3"
    cfg.rollout.out_dir, cfg.rollout.timeout_s = str(tmp_path_factory.mktemp("seg")), 120

    async def run() -> list[Rollout]:
        async with RolloutStack.from_config(cfg, [task], engine=engine) as stack:
            assert stack.runner is not None
            jobs = [RolloutJob(task, "whitebox:00020", f"r{i}", options=dict(OPTIONS)) for i in range(2)]
            return await stack.runner.run_many(jobs)

    done = asyncio.run(run())
    assert [r.reward for r in done] == [1.0, 1.0]
    return [r.model_copy(update={"reward": reward}) for r, reward in zip(done, [1.0, 0.0], strict=True)]


def trained(rec: dict[str, Any]) -> list[float]:
    return [a for m in rec["micro"] for a, on in zip(m["extras"]["adv"], m["loss_mask"], strict=True) if on]


def test_segments_train_only_when_asked(rollouts: list[Rollout]) -> None:
    kinds = [s.kind for s in trace_rollout(rollouts[0]).segments]
    assert kinds == ["main", "subagent", "compaction", "main"]
    exclude = batch_record(rollouts, config(group_size=2))
    outcome = batch_record(rollouts, config(group_size=2, segments="outcome"))
    credited = batch_record(rollouts, config(group_size=2, segments="credited"))
    assert 0 < len(trained(exclude)) < len(trained(outcome)) == len(trained(credited))
    a = float(torch.tensor(0.5 / (0.5 + 1e-6), dtype=torch.float32))
    assert set(trained(exclude)) == set(trained(outcome)) == {a, -a}
    # both rollouts delegated (answer used) and compacted (summary used): the sub-agent takes its
    # parent step's advantage and the two summaries are each other's baseline, so here credited
    # gives every segment token its rollout's advantage, as outcome does
    assert trained(credited) == trained(outcome)


def test_tree_mode_gives_identical_trajectories_no_credit(rollouts: list[Rollout]) -> None:
    """The reference engine's two rollouts are the same tokens: in the merged tree every node holds
    both, so the tree advantage is V - V = 0 everywhere (GRPO gives them +1 and -1)."""
    assert [c.output_ids for c in rollouts[0].calls] == [c.output_ids for c in rollouts[1].calls]
    from harnessrl.rl.algo import build_algorithm
    from harnessrl.rl.packing import layout_tree
    from harnessrl.train.batch import collect_trees

    cfg = config(group_size=2, segments="credited", advantage={"mode": "tree"})
    batch = collect_trees(rollouts, cfg)
    targets = build_algorithm("grpo", cfg.train.advantage, "credited").targets(
        batch.samples, [layout_tree(s) for s in batch.samples]
    )
    assert targets.all_zero
    assert batch_record(rollouts, cfg)["micro"] == []  # the loop skips the step (zero_advantage)


def test_a_real_ppo_step_trains_the_segments(rollouts: list[Rollout]) -> None:
    """PPO (GRPO's +1 / -1 on two identical trajectories cancel exactly), tree value targets (0.5 for
    every token both rollouts share), credited segments, on the tiny Qwen3 with a value head."""
    from harnessrl.engines.models import tiny_qwen3
    from harnessrl.train.batch import collect_trees
    from harnessrl.train.build import trainer_config
    from harnessrl.train.loop import TrainLoop
    from harnessrl.train.ranks import Ranks
    from harnessrl.train.step_record import StepClock
    from harnessrl.train.trainer import Trainer

    # the reference engine records log-prob 0 for its tokens: no truncated IS weight against that
    trainer = {"token_budget": 40, "loss": {"tis_cap": None}}
    cfg = config(
        group_size=2, algorithm="ppo", segments="credited", advantage={"mode": "tree"}, trainer=trainer
    )
    batch = collect_trees(rollouts, cfg)
    model = Trainer(tiny_qwen3()[0], trainer_config(cfg))
    loop = SimpleNamespace(cfg=cfg, trainer=model, ranks=Ranks(model))
    metrics, skip = TrainLoop.optimize(loop, batch, StepClock())  # type: ignore[arg-type]
    assert skip is None and metrics["grad_norm"] > 0
    assert metrics["trained_tokens"] == len(
        trained(batch_record(rollouts, config(group_size=2, segments="outcome")))
    )
