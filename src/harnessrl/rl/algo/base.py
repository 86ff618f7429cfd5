"""The seam every RL algorithm plugs into: per-group and per-rollout hooks around one driver.

    algo = build_algorithm("grpo", AdvantageConfig())
    targets = algo.targets(samples, layouts, values=None)   # values only when algo.needs_values
    trainer.step(targets.layouts, targets.advantages, returns=targets.returns)

`targets` groups the samples by `TreeSample.group_id` (one (task, harness configuration) pair, see
`harnessrl.types.group_id`), calls `group` once per group with the group's rewards, then `rollout`
once per sample with its layout, the per-rollout scalar `group` gave it, (if the algorithm needs
them) the value model's [T] values and, under `mode = "tree"`, the credit of its group's merged tree
(`rl.credit.tree_credit`), all in one `OneRollout`; with `segments = "credited"`, `credit_segments`
then gives compaction and sub-agent tokens their own credit. The trainer stays algorithm-blind: it
only sees [T] arrays.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from harnessrl.rl.config import AdvantageConfig
from harnessrl.rl.credit import TokenCredit, tree_credit
from harnessrl.rl.packing import TreeLayout
from harnessrl.types import TreeSample

SegmentMode = Literal["exclude", "outcome", "credited"]


@dataclass
class Targets:
    """Per tree: its layout and [T] arrays aligned with it."""

    layouts: list[TreeLayout]
    advantages: list[torch.Tensor]
    returns: list[torch.Tensor] | None = None
    """Value targets (algorithms with a value model only)."""

    @property
    def all_zero(self) -> bool:
        """No token has a non-zero advantage (a step on it would only move a KL term)."""
        return all(not bool(a.any()) for a in self.advantages)


@dataclass(frozen=True)
class OneRollout:
    """What the per-rollout hook gets for one tree."""

    sample: TreeSample
    layout: TreeLayout
    scalar: float
    """What `group` gave this rollout."""
    values_T: torch.Tensor | None
    """The value model's [T] values (algorithms with `needs_values` only)."""
    credit: TokenCredit | None = None
    """Its group's merged-tree credit under `mode = "tree"` (None otherwise)."""


class Algorithm:
    """Base class: override `group` and/or `rollout`; `needs_values` asks the loop for a value model."""

    name = "base"
    needs_values = False
    grouped = False
    """Advantages are relative to the group (GRPO): the loop drops groups under the minimum size."""

    def __init__(self, cfg: AdvantageConfig | None = None, segments: SegmentMode = "exclude") -> None:
        self.cfg = cfg or AdvantageConfig()
        self.segments = segments
        """`train.segments`: `credited` gives compactions and sub-agents credit of their own."""

    def group(self, rewards_G: list[float]) -> list[float]:
        """Per-group hook: the G rewards of one group -> one scalar per rollout (default: the reward)."""
        return list(rewards_G)

    def rollout(self, one: OneRollout) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Per-rollout hook: (advantages [T], returns [T] or None) for one tree (`OneRollout`)."""
        raise NotImplementedError

    def targets(
        self,
        samples: Sequence[TreeSample],
        layouts: Sequence[TreeLayout],
        values: Sequence[torch.Tensor] | None = None,
    ) -> Targets:
        """Run the hooks over a batch (module docstring); results in sample order."""
        if self.needs_values and values is None:
            raise ValueError(f"{self.name} needs the value model's values for every layout")
        members: dict[str, list[int]] = defaultdict(list)
        for i, s in enumerate(samples):
            members[s.group_id].append(i)
        scalars = [0.0] * len(samples)
        credit: list[TokenCredit | None] = [None] * len(samples)
        for idx in members.values():
            for i, v in zip(idx, self.group([samples[i].reward for i in idx]), strict=True):
                scalars[i] = v
            if self.cfg.mode == "tree":
                merged = tree_credit([samples[i].reward for i in idx], [layouts[i] for i in idx])
                for i, c in zip(idx, merged, strict=True):
                    credit[i] = c
        adv: list[torch.Tensor] = []
        ret: list[torch.Tensor] = []
        for i, (s, L) in enumerate(zip(samples, layouts, strict=True)):
            a, r = self.rollout(
                OneRollout(s, L, scalars[i], values[i] if values is not None else None, credit[i])
            )
            adv.append(a)
            if r is not None:
                ret.append(r)
        targets = Targets(list(layouts), adv, ret if self.needs_values else None)
        return self.credit_segments(samples, targets, scalars) if self.segments == "credited" else targets

    def credit_segments(
        self, samples: Sequence[TreeSample], targets: Targets, scalars: list[float]
    ) -> Targets:
        """`train.segments = "credited"`: give segments their own credit (default: nothing to change)."""
        return targets
