"""Config sections of `rl/`: the loss and the advantages.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Literal, get_args

from harnessrl.config_section import Section

AlgorithmName = Literal["grpo", "ppo"]
"""The advantage estimators, one class each in `harnessrl.rl.algo.ALGORITHMS` (registered under its
`name`; a test holds the two equal). The one list of algorithm names, torch-free, so that the
config's `train.algorithm` takes its Literal from here. Adding one: its class in `rl/algo/`, its
name here."""
ALGORITHM_NAMES: tuple[str, ...] = get_args(AlgorithmName)


class LossConfig(Section):
    """The policy / value loss of `harnessrl.rl.losses` (formulas in that module's docstring)."""

    clip_low: float = 0.2
    """PPO ratio clip below 1: rho is clipped to [1 - clip_low, 1 + clip_high]."""
    clip_high: float = 0.2
    """PPO ratio clip above 1 (raise it for DAPO-style clip-higher)."""
    tis_cap: float | None = 2.0
    """Truncation c of the importance weight exp(logp_old - logp_rollout); None disables TIS."""
    kl_coef: float = 0.0
    """Weight of the k3 KL to the reference model (0 = no reference model is run)."""
    value_coef: float = 0.5
    """Weight of the value loss (PPO with a value head)."""
    value_clip: float | None = 0.2
    """Clip range of the value update around the old value; None = unclipped."""


class AdvantageConfig(Section):
    """Settings of the advantage estimators (`harnessrl.rl.algo`; which one runs is `train.algorithm`)."""

    mode: Literal["rollout", "tree"] = "rollout"
    """rollout: every trained token of a rollout gets the rollout's advantage (GRPO) or its own
    path's reward as the return (PPO); tree: credit from the group's merged prefix tree, so a prefix
    several rollouts share is not credited for one branch's failure (`harnessrl.rl.credit`: the
    advantage after each branch point is its subtree's return against the branch point's; PPO's
    value target is the subtree's return)."""
    normalize_std: bool = True
    """GRPO: divide by the group's std (population std) + eps."""
    eps: float = 1e-6
    """GRPO: added to the std."""
    gamma: float = 1.0
    """PPO: discount over model tokens."""
    lam: float = 1.0
    """PPO: GAE lambda."""
