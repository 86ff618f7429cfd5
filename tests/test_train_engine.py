"""Invariant (d): the embedded engine's sampling log-probs equal the trainer's log-probs for the same
weights, before and after a training step handed to the engine with `Trainer.weights()`."""

from __future__ import annotations

import pytest
import torch

from harnessrl.config import TrainerConfig
from harnessrl.engines.hf import HFEngine
from harnessrl.protocols import SamplingParams
from harnessrl.rl.advantages import broadcast
from harnessrl.rl.packing import layout_tree
from harnessrl.train.causal_lm import tiny_causal_lm
from harnessrl.train.trainer import Trainer
from harnessrl.types import TreeNode, TreeSample

torch.set_num_threads(1)
VOCAB = 71


async def two_call_rollout(
    engine: HFEngine,
    temperature: float,
    seed: int,
    prompt_ids: tuple[int, ...] = (3, 14, 15, 9, 2, 6, 5, 35),
    env_ids: tuple[int, ...] = (8, 9, 7, 9),
    max_tokens: int = 12,
) -> TreeSample:
    """Call 1 from `prompt_ids`; call 2 from call 1's prompt + output + the environment tokens."""
    prompt, env = list(prompt_ids), list(env_ids)
    sp = SamplingParams(temperature=temperature, max_tokens=max_tokens, seed=seed)
    first = await engine.generate(prompt, sp)
    second = await engine.generate(prompt + first.output_ids + env, sp)
    p, e = len(prompt), len(env)
    nodes = [
        TreeNode(node_id=0, parent=-1, tokens=prompt, model_mask=[False] * p, logprobs=[0.0] * p),
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
            model_mask=[False] * e + [True] * len(second.output_ids),
            logprobs=[0.0] * e + second.output_logprobs,
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


@pytest.mark.slow
async def test_smollm2_engine_and_trainer_logprobs_agree() -> None:
    """(d) with the embedded default model (SmolLM2-135M-Instruct, tied embeddings, 49k vocabulary)."""
    from harnessrl.engines.models import load_model, load_tokenizer

    tok = load_tokenizer("default")
    engine = HFEngine(load_model("default"), tok, max_batch=2, seed=0)
    trainer = Trainer(load_model("default"), TrainerConfig(lr=1e-5, temperature=0.8))
    try:
        chat = [{"role": "user", "content": "Name a colour."}]
        text = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        ids = tok.encode(text, add_special_tokens=False)
        sp = SamplingParams(temperature=0.8, max_tokens=16, seed=1)
        samples = []
        for k in range(2):
            res = await engine.generate(ids, sp)
            n = len(res.output_ids)
            nodes = [
                TreeNode(
                    node_id=0, parent=-1, tokens=ids, model_mask=[False] * len(ids), logprobs=[0.0] * len(ids)
                ),
                TreeNode(
                    node_id=1,
                    parent=0,
                    tokens=res.output_ids,
                    model_mask=[True] * n,
                    logprobs=res.output_logprobs,
                ),
            ]
            samples.append(
                TreeSample(rollout_id=f"s{k}", group_id="g", reward=float(k), nodes=nodes, paths=[[0, 1]])
            )
        gap = worst_gap(trainer, samples)
        layouts = [layout_tree(x) for x in samples]
        trainer.step(layouts, [broadcast(L, a) for L, a in zip(layouts, (-1.0, 1.0), strict=True)])
        await engine.update_weights({k: v.clone() for k, v in trainer.weights().items()})
        res = await engine.generate(ids, sp)
        after = samples[0].model_copy(deep=True)
        after.nodes[1] = TreeNode(
            node_id=1,
            parent=0,
            tokens=res.output_ids,
            model_mask=[True] * len(res.output_ids),
            logprobs=res.output_logprobs,
        )
        gap_after = worst_gap(trainer, [after])
        print(f"SmolLM2 engine vs trainer max |logp diff| = {gap:.2e} before, {gap_after:.2e} after a step")
        assert gap < 1e-4 and gap_after < 1e-4
    finally:
        await engine.close()
