"""Settings of the RL math (torch-free, so that `harnessrl.config` can embed them)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict


class LossConfig(BaseModel):
    """The policy / value loss of `harnessrl.rl.losses` (formulas in that module's docstring)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

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


class AdvantageConfig(BaseModel):
    """How advantages are computed (`harnessrl.rl.advantages`)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    estimator: Literal["grpo", "ppo"] = "grpo"
    """grpo = group-normalised rollout reward; ppo = per-branch GAE with a value model."""
    normalize_std: bool = True
    """GRPO: divide by the group's std (population std) + eps."""
    eps: float = 1e-6
    """GRPO: added to the std."""
    gamma: float = 1.0
    """PPO: discount over model tokens."""
    lam: float = 1.0
    """PPO: GAE lambda."""
