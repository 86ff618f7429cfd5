"""GRPO: the reward normalised inside its (task, harness configuration) group, on every trained token.

A_i = (R_i - mean_g) / (std_g + eps) (population std), or R_i - mean_g with `normalize_std = false`
(formulas and edge cases in `harnessrl.rl.advantages.grpo_advantages`). No value model.
"""

from __future__ import annotations

import torch

from harnessrl.rl.advantages import broadcast, grpo_advantages
from harnessrl.rl.algo.base import Algorithm
from harnessrl.rl.packing import TreeLayout
from harnessrl.types import TreeSample


class Grpo(Algorithm):
    name = "grpo"
    grouped = True

    def group(self, rewards_G: list[float]) -> list[float]:
        one = ["g"] * len(rewards_G)
        return grpo_advantages(rewards_G, one, normalize_std=self.cfg.normalize_std, eps=self.cfg.eps)

    def rollout(
        self, sample: TreeSample, layout: TreeLayout, scalar: float, values_T: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        return broadcast(layout, scalar), None
