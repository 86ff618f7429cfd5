"""`sft_step` on the RL trainer: a token-mean NLL over tree-packed batches that goes down on held-out
trees of the same shape, and touches only model tokens (default run: a 64-token tiny model, <1 s)."""

from __future__ import annotations

import random

import torch

from harnessrl.config import Config
from harnessrl.rl.packing import layout_tree
from harnessrl.train.causal_lm import tiny_causal_lm
from harnessrl.train.sft import (
    SftData,
    mean_nll,
    merge_samples,
    merged_layout,
    sft_step,
    sft_trainer_config,
    token_weights,
)
from harnessrl.train.trainer import Trainer
from harnessrl.types import TreeNode, TreeSample

ANSWER = [7, 8, 9, 10, 11, 3]  # the "action" every tree demonstrates after its own prompt


def tree(i: int) -> TreeSample:
    rng = random.Random(i)
    prompt = [1, 2] + [rng.randrange(20, 64) for _ in range(10)]
    nodes = [
        TreeNode(node_id=0, parent=-1, tokens=prompt, model_mask=[False] * 12, logprobs=[0.0] * 12),
        TreeNode(node_id=1, parent=0, tokens=ANSWER, model_mask=[True] * 6, logprobs=[0.0] * 6),
    ]
    return TreeSample(rollout_id=f"r{i}", group_id="g", reward=1.0, nodes=nodes, paths=[[0, 1]])


def test_sft_step_lowers_heldout_nll_on_model_tokens_only() -> None:
    cfg = Config()
    cfg.sft.lr = 1e-2
    trainer = Trainer(tiny_causal_lm(seed=0), sft_trainer_config(cfg))
    data = SftData(train=[tree(i) for i in range(8)], heldout=[tree(100 + i) for i in range(4)])
    train = [layout_tree(s) for s in data.train]
    held = [layout_tree(s) for s in data.heldout]
    weights = token_weights(train)
    assert [int((w > 0).sum()) for w in weights] == [6] * 8  # the 12 prompt tokens carry no loss
    assert abs(float(sum(w.sum() for w in weights)) - 1.0) < 1e-6  # a token mean
    before = mean_nll(trainer, held)
    assert before is not None
    embed_before = trainer.model.get_input_embeddings().weight[40].clone()
    nll = [sft_step(trainer, train)["nll"] for _ in range(5)]
    after = mean_nll(trainer, held)
    assert after is not None and after < 0.5 * before, (before, after)
    assert nll[-1] < nll[0] and trainer.state.step == 5
    assert not torch.equal(embed_before, trainer.model.get_input_embeddings().weight[40])  # Adam moved it


def test_merged_forest_gives_the_same_nll_with_fewer_tokens() -> None:
    """Trees sharing a prompt prefix merged into one forest: same token-mean NLL, shared tokens once."""
    cfg = Config()
    trainer = Trainer(tiny_causal_lm(seed=1), sft_trainer_config(cfg))
    samples = [tree(i) for i in range(3)] + [tree(0)]  # tree 0 twice: its tokens weigh double
    separate = [layout_tree(s) for s in samples]
    merged, counts = merge_samples(samples)
    layout, w = merged_layout(samples)
    # roots: [1, 2] shared by all, then each distinct prompt tail + answer; tree 0's path twice
    assert counts[0] == 4 and layout.num_tokens == 2 + 3 * 16 < sum(L.num_tokens for L in separate) == 72
    assert len(merged.paths) == 4 and merged.paths[0] == merged.paths[3]
    assert abs(float(w.sum()) - 1.0) < 1e-6 and int((w > 0).sum()) == 18
    a = mean_nll(trainer, separate)
    b = mean_nll(trainer, [layout], [w])
    assert a is not None and b is not None and abs(a - b) < 1e-5, (a, b)
