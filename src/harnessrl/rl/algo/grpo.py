"""GRPO: the reward normalised inside its (task, harness configuration) group, on every trained token.

A_i = (R_i - mean_g) / (std_g + eps) (population std), or R_i - mean_g with `normalize_std = false`
(formulas and edge cases in `harnessrl.rl.advantages.grpo_advantages`). No value model. Under
`mode = "tree"` each token gets its merged-tree advantage over the same scale; with
`segments = "credited"` compactions and sub-agents get their own (`harnessrl.rl.credit`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import torch

from harnessrl.rl.advantages import broadcast, grpo_advantages
from harnessrl.rl.algo.base import Algorithm, OneRollout, Targets
from harnessrl.rl.credit import credited_advantages
from harnessrl.rl.packing import TreeLayout
from harnessrl.types import TreeSample


class Grpo(Algorithm):
    name = "grpo"
    grouped = True

    def group(self, rewards_G: list[float]) -> list[float]:
        one = ["g"] * len(rewards_G)
        return grpo_advantages(rewards_G, one, normalize_std=self.cfg.normalize_std, eps=self.cfg.eps)

    def scale(self, rewards_G: list[float]) -> float:
        """What a group's advantages are divided by: std + eps (population std), or 1."""
        r = torch.tensor(rewards_G, dtype=torch.float64)
        scale = float(r.std(unbiased=False)) + self.cfg.eps
        return scale if self.cfg.normalize_std and scale > 0 else 1.0

    def rollout(self, one: OneRollout) -> tuple[torch.Tensor, torch.Tensor | None]:
        if one.credit is None:
            return broadcast(one.layout, one.scalar), None
        return (one.credit.advantage / self._scales[one.sample.group_id]).float(), None

    def targets(
        self, samples: Sequence[TreeSample], layouts: Sequence[TreeLayout], values: Any = None
    ) -> Targets:
        groups: dict[str, list[float]] = defaultdict(list)
        for s in samples:
            groups[s.group_id].append(s.reward)
        self._scales = {g: self.scale(rs) for g, rs in groups.items()}
        return super().targets(samples, layouts, values)

    def credit_segments(
        self, samples: Sequence[TreeSample], targets: Targets, scalars: list[float]
    ) -> Targets:
        targets.advantages = credited_advantages(
            samples, targets.layouts, targets.advantages, scalars,
            eps=self.cfg.eps, normalize_std=self.cfg.normalize_std, tree=self.cfg.mode == "tree",
        )  # fmt: skip
        return targets
