"""RL algorithms: a literal registry of small classes over one seam (`base.Algorithm`).

Adding an estimator = one module with a `group` and/or `rollout` hook, its class in the tuple here and
its name in `harnessrl.rl.config.AlgorithmName` (the torch-free list the config's Literal comes from).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from harnessrl.rl.algo.base import Algorithm, SegmentMode, Targets
from harnessrl.rl.algo.grpo import Grpo
from harnessrl.rl.algo.ppo import Ppo
from harnessrl.rl.config import AdvantageConfig
from harnessrl.rl.credit import differing_share
from harnessrl.rl.packing import TreeLayout
from harnessrl.types import TreeSample

ALGORITHMS: dict[str, type[Algorithm]] = {cls.name: cls for cls in (Grpo, Ppo)}
"""Each algorithm class under its `name`: exactly the names of `rl.config.ALGORITHM_NAMES`, in order."""


def build_algorithm(
    name: str, cfg: AdvantageConfig | None = None, segments: SegmentMode = "exclude"
) -> Algorithm:
    """The algorithm registered under `name`; ValueError listing the known names otherwise."""
    try:
        return ALGORITHMS[name](cfg, segments)
    except KeyError:
        raise ValueError(f"unknown algorithm {name!r}; known: {', '.join(sorted(ALGORITHMS))}") from None


def credit_differs(
    name: str,
    cfg: AdvantageConfig | None,
    samples: Sequence[TreeSample],
    layouts: Sequence[TreeLayout],
    values: Sequence[torch.Tensor] | None,
    advantages: Sequence[torch.Tensor],
) -> float:
    """For advantages computed under `train.segments = "credited"`: the share of the step's loss
    weight on trained tokens whose advantage is not what `outcome` (the rollout's advantage) gives
    them, i.e. how far segment credit moved this batch. 0 when every rollout of each group compacted
    and every summary and helper was used (`rl.credit`'s module docstring)."""
    plain = build_algorithm(name, cfg, "outcome").targets(samples, layouts, values)
    return differing_share(samples, layouts, advantages, plain.advantages)


__all__ = ["ALGORITHMS", "Algorithm", "SegmentMode", "Targets", "build_algorithm", "credit_differs"]
