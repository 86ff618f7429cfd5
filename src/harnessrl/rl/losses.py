"""Token-level clipped policy gradient with truncated importance sampling, on packed trees.

For trained token t of rollout i (each unique token once: shared-prefix tokens are not repeated):

    rho_t = exp(logp_theta(t) - logp_old(t))                     ratio to the pre-update trainer policy
    w_t   = min(exp(logp_old(t) - logp_rollout(t)), c)           truncated IS weight (detached; c = tis_cap)
    pg_t  = -min(rho_t * A_t, clip(rho_t, 1 - eps_low, 1 + eps_high) * A_t)
    kl_t  = exp(q_t) - q_t - 1,  q_t = logp_ref(t) - logp_theta(t)   (k3 estimator, if kl_coef > 0)
    l_t   = w_t * pg_t + kl_coef * kl_t

    L = (1 / N) * sum_i (1 / M_i) * sum_{t in M_i} l_t

where N is the number of rollouts (trees) in the optimizer step and M_i the set of unique trained
tokens of rollout i's tree. A rollout's weight is 1/N whatever its number of branches or tokens. The
trainer carries 1/(N * M_i) as a per-token weight (`advantages.rollout_token_weights`) and each
micro-batch adds sum_t weight_t * l_t, so gradient accumulation over micro-batches sums to L exactly.

The value loss (PPO) is aggregated the same way:
    lv_t = 0.5 * max((V_t - G_t)^2, (V_old_t + clip(V_t - V_old_t, -eps_v, eps_v) - G_t)^2).

Logged (not in the loss): entropy of the predicting distribution, clip fraction, KL, and the
rollout/trainer mismatch |logp_old - logp_rollout| (mean, max) with the fraction of tokens whose IS
ratio exceeds c (truncated). Left out: sequence-level (GSPO-style) ratios and dual-clip PPO.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from harnessrl.rl.config import LossConfig


@dataclass
class Metrics:
    """Running sums / counts / maxima over micro-batches; `result()` gives means (plain sums for count 0)."""

    sums: dict[str, float] = field(default_factory=dict)
    counts: dict[str, float] = field(default_factory=dict)
    maxima: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, total: float, count: float) -> None:
        self.sums[name] = self.sums.get(name, 0.0) + total
        self.counts[name] = self.counts.get(name, 0.0) + count

    def top(self, name: str, value: float) -> None:
        self.maxima[name] = max(self.maxima.get(name, float("-inf")), value)

    def merge(self, other: Metrics) -> None:
        for k, v in other.sums.items():
            self.add(k, v, other.counts[k])
        for k, v in other.maxima.items():
            self.top(k, v)

    def result(self) -> dict[str, float]:
        out = {k: self.sums[k] / self.counts[k] if self.counts[k] > 0 else self.sums[k] for k in self.sums}
        out.update(self.maxima)
        return out


def tis_weights(logp_old: torch.Tensor, logp_rollout: torch.Tensor, cap: float | None) -> torch.Tensor:
    """[M] w = min(exp(logp_old - logp_rollout), cap); all ones when cap is None."""
    if cap is None:
        return torch.ones_like(logp_old)
    return torch.exp(logp_old - logp_rollout).clamp(max=cap)


def mismatch_metrics(
    logp_old: torch.Tensor, logp_rollout: torch.Tensor, cap: float | None, into: Metrics
) -> None:
    """Rollout vs. trainer log-prob mismatch over the trained tokens."""
    n = logp_old.numel()
    if n == 0:
        return
    diff = (logp_old - logp_rollout).abs()
    into.add("mismatch/abs_mean", float(diff.sum()), n)
    into.top("mismatch/abs_max", float(diff.max()))
    if cap is not None:
        into.add("mismatch/frac_truncated", float((torch.exp(logp_old - logp_rollout) > cap).sum()), n)


def policy_loss(
    logp: torch.Tensor,
    logp_old: torch.Tensor,
    logp_rollout: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    cfg: LossConfig,
    *,
    logp_ref: torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
    metrics: Metrics | None = None,
) -> torch.Tensor:
    """sum_t weight_t * l_t over one micro-batch's M trained tokens (all arguments [M])."""
    logp_old = logp_old.detach()
    ratio = torch.exp(logp - logp_old)
    clipped = ratio.clamp(1.0 - cfg.clip_low, 1.0 + cfg.clip_high)
    pg = -torch.minimum(ratio * advantages, clipped * advantages)
    w = tis_weights(logp_old, logp_rollout, cfg.tis_cap)
    per_token = w * pg
    kl = None
    if cfg.kl_coef > 0.0:
        if logp_ref is None:
            raise ValueError("kl_coef > 0 needs reference log-probs")
        q = logp_ref.detach() - logp
        kl = torch.exp(q) - q - 1.0
        per_token = per_token + cfg.kl_coef * kl
    loss = (weights * per_token).sum()
    if metrics is not None:
        n = logp.numel()
        with torch.no_grad():
            metrics.add("loss/pg", float((weights * w * pg).sum()), 0.0)
            metrics.add("ratio/mean", float(ratio.sum()), n)
            metrics.add("ratio/clipfrac", float(((ratio * advantages) > (clipped * advantages)).sum()), n)
            metrics.add("tis/mean", float(w.sum()), n)
            if kl is not None:
                metrics.add("kl/k3", float(kl.sum()), n)
            if entropy is not None:
                metrics.add("entropy", float(entropy.sum()), n)
        mismatch_metrics(logp_old, logp_rollout, cfg.tis_cap, metrics)
    return loss


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    weights: torch.Tensor,
    clip: float | None,
    metrics: Metrics | None = None,
) -> torch.Tensor:
    """sum_t weight_t * lv_t (clipped value loss; unclipped when `clip` is None)."""
    err = (values - returns) ** 2
    if clip is not None:
        v_clip = old_values + (values - old_values).clamp(-clip, clip)
        err = torch.maximum(err, (v_clip - returns) ** 2)
    loss = (weights * 0.5 * err).sum()
    if metrics is not None:
        metrics.add("value/mse", float(((values - returns) ** 2).detach().sum()), values.numel())
    return loss
