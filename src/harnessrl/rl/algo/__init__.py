"""RL algorithms: a literal registry of small classes over one seam (`base.Algorithm`).

Adding an estimator = one module with a `group` and/or `rollout` hook, its class in the tuple here and
its name in `harnessrl.rl.config.AlgorithmName` (the torch-free list the config's Literal comes from).
"""

from __future__ import annotations

from harnessrl.rl.algo.base import Algorithm, SegmentMode, Targets
from harnessrl.rl.algo.grpo import Grpo
from harnessrl.rl.algo.ppo import Ppo
from harnessrl.rl.config import AdvantageConfig

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


__all__ = ["ALGORITHMS", "Algorithm", "SegmentMode", "Targets", "build_algorithm"]
