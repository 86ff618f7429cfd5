"""Learning test: GRPO through tree packing raises a tiny model's reward on a toy task.

Each rollout is two model calls: call 1 answers the prompt (3 tokens), the environment appends a
token, call 2 answers (2 tokens). Reward 1 when the final token is TARGET. A random 16-token model
hits it ~1/16 of the time. Sampling is a plain loop of full forwards (no KV cache): the sequences are
a dozen tokens long.
"""

from __future__ import annotations

import time

import pytest
import torch

from harnessrl.config import TrainerConfig
from harnessrl.rl.advantages import broadcast, grpo_advantages
from harnessrl.rl.packing import layout_tree
from harnessrl.train.causal_lm import tiny_causal_lm
from harnessrl.train.trainer import Trainer
from harnessrl.types import TreeNode, TreeSample

VOCAB, TARGET, ENV = 16, 7, 0
PROMPTS = [[1, 2, 3], [4, 5, 6], [8, 9, 10], [11, 12, 13]]
GROUP = 8


@torch.no_grad()
def sample(
    model: torch.nn.Module, prefix_BT: torch.Tensor, n: int, gen: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """n tokens per row at temperature 1: (ids [B, n], log-probs [B, n])."""
    ids, lps = [], []
    seq = prefix_BT
    for _ in range(n):
        logp = torch.log_softmax(model(input_ids=seq).logits[:, -1].float(), dim=-1)
        tok = torch.multinomial(logp.exp(), 1, generator=gen)
        ids.append(tok)
        lps.append(logp.gather(-1, tok))
        seq = torch.cat([seq, tok], dim=1)
    return torch.cat(ids, 1), torch.cat(lps, 1)


def rollouts(model: torch.nn.Module, gen: torch.Generator) -> list[TreeSample]:
    prompts = torch.tensor([p for p in PROMPTS for _ in range(GROUP)])
    a, la = sample(model, prompts, 3, gen)
    env = torch.full((len(prompts), 1), ENV)
    b, lb = sample(model, torch.cat([prompts, a, env], 1), 2, gen)
    out = []
    for i in range(len(prompts)):
        nodes = [
            TreeNode(
                node_id=0, parent=-1, tokens=prompts[i].tolist(), model_mask=[False] * 3, logprobs=[0.0] * 3
            ),
            TreeNode(
                node_id=1, parent=0, tokens=a[i].tolist(), model_mask=[True] * 3, logprobs=la[i].tolist()
            ),
            TreeNode(
                node_id=2,
                parent=1,
                tokens=[ENV, *b[i].tolist()],
                model_mask=[False, True, True],
                logprobs=[0.0, *lb[i].tolist()],
            ),
        ]
        reward = float(b[i, -1].item() == TARGET)
        out.append(
            TreeSample(
                rollout_id=str(i), group_id=str(i // GROUP), reward=reward, nodes=nodes, paths=[[0, 1, 2]]
            )
        )
    return out


@pytest.mark.slow
def test_grpo_raises_mean_reward() -> None:
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(0)
    trainer = Trainer(tiny_causal_lm(vocab_size=VOCAB, seed=0), TrainerConfig(lr=3e-3, seed=0))
    history = []
    start = time.monotonic()
    for _ in range(40):
        samples = rollouts(trainer.model, gen)
        history.append(sum(s.reward for s in samples) / len(samples))
        layouts = [layout_tree(s) for s in samples]
        adv = grpo_advantages([s.reward for s in samples], [s.group_id for s in samples])
        trainer.step(layouts, [broadcast(L, x) for L, x in zip(layouts, adv, strict=True)])
    first, last = sum(history[:5]) / 5, sum(history[-5:]) / 5
    print(f"mean reward first 5 steps {first:.3f}, last 5 {last:.3f}, {time.monotonic() - start:.0f} s")
    assert first < 0.2
    assert last > first + 0.4
