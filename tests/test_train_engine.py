"""Invariant (d): the embedded engine's sampling log-probs equal the trainer's log-probs for the same
weights, before and after a training step handed to the engine with `Trainer.weights()`."""

from __future__ import annotations

import pytest
import torch

from harnessrl.engines.hf import HFEngine
from harnessrl.protocols import SamplingParams
from harnessrl.rl.advantages import broadcast
from harnessrl.rl.packing import layout_tree
from harnessrl.train.config import TrainerConfig
from harnessrl.train.models import tiny_causal_lm
from harnessrl.train.trainer import Trainer
from harnessrl.types import TreeNode, TreeSample

torch.set_num_threads(1)
VOCAB = 71


async def two_call_rollout(engine: HFEngine, temperature: float, seed: int) -> TreeSample:
    """Call 1 from a prompt; call 2 from call 1's prompt + output + some environment tokens."""
    sp = SamplingParams(temperature=temperature, max_tokens=12, seed=seed)
    prompt = [3, 14, 15, 9, 2, 6, 5, 35]
    first = await engine.generate(prompt, sp)
    env = [8, 9, 7, 9]
    second = await engine.generate(prompt + first.output_ids + env, sp)
    nodes = [
        TreeNode(node_id=0, parent=-1, tokens=prompt, model_mask=[False] * 8, logprobs=[0.0] * 8),
        TreeNode(
            node_id=1,
            parent=0,
            tokens=first.output_ids,
            model_mask=[True] * len(first.output_ids),
            logprobs=first.output_logprobs,
        ),
        TreeNode(
            node_id=2,
            parent=1,
            tokens=env + second.output_ids,
            model_mask=[False] * 4 + [True] * len(second.output_ids),
            logprobs=[0.0] * 4 + second.output_logprobs,
        ),
    ]
    return TreeSample(rollout_id=f"r{seed}", group_id="g", reward=1.0, nodes=nodes, paths=[[0, 1, 2]])


def worst_gap(trainer: Trainer, samples: list[TreeSample]) -> float:
    layouts = [layout_tree(s) for s in samples]
    ours = trainer.logprobs(layouts)
    return max(
        (lp[L.loss_mask] - L.rollout_logprobs[L.loss_mask]).abs().max().item()
        for lp, L in zip(ours, layouts, strict=True)
    )


@pytest.mark.parametrize("temperature", [1.0, 0.7])
async def test_engine_and_trainer_logprobs_agree(temperature: float) -> None:
    engine = HFEngine(tiny_causal_lm(vocab_size=VOCAB, seed=11), None, max_batch=4, seed=0)
    cfg = TrainerConfig(lr=3e-2, temperature=temperature)
    trainer = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=11), cfg)
    try:
        before = [await two_call_rollout(engine, temperature, s) for s in (1, 2)]
        assert worst_gap(trainer, before) < 1e-5
        layouts = [layout_tree(s) for s in before]
        trainer.step(layouts, [broadcast(L, a) for L, a in zip(layouts, (1.0, -1.0), strict=True)])
        assert worst_gap(trainer, before) > 1e-3  # the policy moved: old rollouts are now off-policy
        await engine.update_weights({k: v.clone() for k, v in trainer.weights().items()})
        after = [await two_call_rollout(engine, temperature, s) for s in (3, 4)]
        assert worst_gap(trainer, after) < 1e-5
    finally:
        await engine.close()
