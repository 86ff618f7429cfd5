"""From TreeSamples to what the trainer takes: layouts plus per-token advantages (and value targets).

    targets = grpo_targets(samples, AdvantageConfig())
    trainer.step(targets.layouts, targets.advantages)

    layouts = [layout_tree(s) for s in samples]
    targets = ppo_targets(samples, layouts, trainer.values(layouts), AdvantageConfig(estimator="ppo"))
    trainer.step(targets.layouts, targets.advantages, returns=targets.returns)

Only rewards, group ids and the trees are read: nothing here knows which harness or task produced them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from harnessrl.config import AdvantageConfig
from harnessrl.rl.advantages import broadcast, grpo_advantages, ppo_advantages
from harnessrl.rl.packing import TreeLayout, layout_tree
from harnessrl.types import TreeSample


@dataclass
class Targets:
    """Per tree: its layout and [T] arrays aligned with it."""

    layouts: list[TreeLayout]
    advantages: list[torch.Tensor]
    returns: list[torch.Tensor] | None = None
    """Value targets (PPO only)."""


def grpo_targets(samples: Sequence[TreeSample], cfg: AdvantageConfig) -> Targets:
    """GRPO: one advantage per rollout, normalised inside its group, on every trained token."""
    layouts = [layout_tree(s) for s in samples]
    adv = grpo_advantages(
        [s.reward for s in samples],
        [s.group_id for s in samples],
        normalize_std=cfg.normalize_std,
        eps=cfg.eps,
    )
    return Targets(layouts, [broadcast(L, a) for L, a in zip(layouts, adv, strict=True)])


def ppo_targets(
    samples: Sequence[TreeSample],
    layouts: Sequence[TreeLayout],
    values: Sequence[torch.Tensor],
    cfg: AdvantageConfig,
) -> Targets:
    """PPO: per-branch GAE from the values the trainer's value model gave each layout.

    Every kept path gets its rollout's reward (`TreeSample.reward`)."""
    adv: list[torch.Tensor] = []
    ret: list[torch.Tensor] = []
    for s, L, v in zip(samples, layouts, values, strict=True):
        a, r = ppo_advantages(L, v, [s.reward] * len(L.path_tokens), gamma=cfg.gamma, lam=cfg.lam)
        adv.append(a)
        ret.append(r)
    return Targets(list(layouts), adv, ret)
