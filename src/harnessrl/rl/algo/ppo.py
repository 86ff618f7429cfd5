"""PPO: per-branch GAE on each tree from the value model's values (no group statistics).

Every kept path gets its rollout's reward; `gamma` / `lam` from AdvantageConfig (formulas in
`harnessrl.rl.advantages.ppo_advantages`). The loop gives the trainer a value head when none is set.
Under `mode = "tree"` a token's value target is the return of its node's subtree in the group's
merged tree (`harnessrl.rl.credit`) and its advantage that target minus its value (gamma = lam = 1
only); with `segments = "credited"` the tokens of a segment whose output was not used return 0
instead of the reward (the tokens before it on its paths keep theirs).
"""

from __future__ import annotations

import torch

from harnessrl.rl.advantages import ppo_advantages
from harnessrl.rl.algo.base import Algorithm, OneRollout
from harnessrl.rl.credit import TokenCredit, segment_of_tokens, segment_used
from harnessrl.rl.packing import TreeLayout
from harnessrl.types import TreeSample


class Ppo(Algorithm):
    name = "ppo"
    needs_values = True

    def rollout(self, one: OneRollout) -> tuple[torch.Tensor, torch.Tensor | None]:
        sample, layout, scalar, values_T = one.sample, one.layout, one.scalar, one.values_T
        assert values_T is not None  # checked by Algorithm.targets
        own = segment_used(sample) if self.segments == "credited" and sample.segments else None
        if one.credit is not None:
            return self._tree(sample, layout, values_T, one.credit, own)
        gae = {"gamma": self.cfg.gamma, "lam": self.cfg.lam}
        full = ppo_advantages(layout, values_T, [scalar] * len(layout.path_tokens), **gae)
        if own is None:
            return full
        # An unused segment's own tokens return 0: GAE on its paths with reward 0, taken only at its
        # tokens, so the main tokens its path starts from (a summary request extends the main thread)
        # keep the reward they earn on every path.
        rewards = [scalar if own[sample.nodes[p[-1]].segment] else 0.0 for p in sample.paths]
        zeroed = ppo_advantages(layout, values_T, rewards, **gae)
        unused_T = ~torch.tensor(own)[segment_of_tokens(sample, layout)]
        return torch.where(unused_T, zeroed[0], full[0]), torch.where(unused_T, zeroed[1], full[1])

    def _tree(
        self,
        sample: TreeSample,
        layout: TreeLayout,
        values_T: torch.Tensor,
        credit: TokenCredit,
        own: list[bool] | None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.cfg.gamma != 1.0 or self.cfg.lam != 1.0:
            raise ValueError("advantage.mode = 'tree' with PPO needs gamma = lam = 1")
        ret = credit.value.clone()
        if own is not None:
            ret[~torch.tensor(own)[segment_of_tokens(sample, layout)]] = 0.0
        mask = layout.loss_mask
        adv = torch.where(mask, ret - values_T.detach().double().cpu(), torch.zeros_like(ret))
        return adv.float(), torch.where(mask, ret, torch.zeros_like(ret)).float()
