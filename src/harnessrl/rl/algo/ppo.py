"""PPO: per-branch GAE on each tree from the value model's values (no group statistics).

Every kept path gets its rollout's reward; `gamma` / `lam` from AdvantageConfig (formulas in
`harnessrl.rl.advantages.ppo_advantages`). The loop gives the trainer a value head when none is set.
"""

from __future__ import annotations

import torch

from harnessrl.rl.advantages import ppo_advantages
from harnessrl.rl.algo.base import Algorithm
from harnessrl.rl.packing import TreeLayout
from harnessrl.types import TreeSample


class Ppo(Algorithm):
    name = "ppo"
    needs_values = True

    def rollout(
        self, sample: TreeSample, layout: TreeLayout, scalar: float, values_T: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        assert values_T is not None  # checked by Algorithm.targets
        rewards = [scalar] * len(layout.path_tokens)
        return ppo_advantages(layout, values_T, rewards, gamma=self.cfg.gamma, lam=self.cfg.lam)
