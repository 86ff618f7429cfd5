"""Advantages on prefix trees: GRPO per group, and PPO with per-branch GAE.

Both produce per-token arrays aligned with a TreeLayout ([T], zero off the trained tokens); the trainer
only sees those arrays (it is algorithm-blind).

GRPO. A group is one (task, harness configuration) pair: `TreeSample.group_id` (`types.group_id`).
Rollout i of group g gets A_i = (R_i - mean_g) / (std_g + eps), or R_i - mean_g with
`normalize_std=False`; std is the population std (a group of two gives +-1/(1+eps)). Statistics are
computed inside each group only, never across groups, so two harness configurations of the same task
never share a baseline. Every trained token of every kept path of rollout i gets A_i (a token on
several paths still appears once in the layout and gets A_i once).

PPO, per-branch GAE. The time steps of a path are its model tokens (environment tokens are part of
the state transition, not actions). On path p with model tokens t_1..t_n, the value of the state
before t_k is V_k (the value head at t_k's parent row), the reward R_p arrives at t_n, and
    delta_k = r_k + gamma * V_{k+1} - V_k     (V_{n+1} = 0, r_k = R_p if k = n else 0)
    A^p_k  = sum_{j>=k} (gamma * lam)^{j-k} delta_j;   G^p_k = A^p_k + V_k (the value target).
With gamma = lam = 1, A^p_k = R_p - V_k. A token on several kept paths (a shared prefix token, before a
branch point) gets the mean over those paths: A_t = mean_{p through t} A^p_t, G_t likewise. A token
after a branch point lies on the paths of its own subtree only, so a sibling's reward never reaches it:
advantages do not cross branch points to siblings. Every kept leaf inherits the rollout's reward by
default, in which case the averaging changes nothing; per-path rewards are accepted for callers that
score leaves separately.

Left out: advantage whitening across the batch for PPO (callers can do it over the trained tokens) and
gamma/lam < 1 across environment tokens (environment tokens are not time steps here).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import torch

from harnessrl.rl.packing import TreeLayout


def grpo_advantages(
    rewards: Sequence[float], group_ids: Sequence[str], *, normalize_std: bool = True, eps: float = 1e-6
) -> list[float]:
    """Per-rollout GRPO advantages; statistics are taken inside each group only."""
    if len(rewards) != len(group_ids):
        raise ValueError(f"{len(rewards)} rewards but {len(group_ids)} group ids")
    members: dict[str, list[int]] = defaultdict(list)
    for i, g in enumerate(group_ids):
        members[g].append(i)
    out = [0.0] * len(rewards)
    for idx in members.values():
        r = torch.tensor([float(rewards[i]) for i in idx], dtype=torch.float64)
        a = r - r.mean()
        scale = float(r.std(unbiased=False)) + eps
        if normalize_std and scale > 0:  # a group of equal rewards has a == 0: no 0/0 even with eps=0
            a = a / scale
        for i, v in zip(idx, a.tolist(), strict=True):
            out[i] = v
    return out


def broadcast(layout: TreeLayout, value: float) -> torch.Tensor:
    """[T] float32: `value` on the trained tokens of `layout`, 0 elsewhere."""
    return torch.where(layout.loss_mask, torch.tensor(value, dtype=torch.float32), torch.tensor(0.0))


def rollout_token_weights(layouts: Sequence[TreeLayout], total: int | None = None) -> list[torch.Tensor]:
    """[T_i] per tree: 1 / (N * M_i) on its trained tokens (N trees, M_i unique trained tokens of tree i).

    Summing weight x per-token loss gives the aggregation of `harnessrl.rl.losses` exactly; a tree
    with no trained token contributes nothing (and still counts in N). `total` is N when `layouts` are
    one rank's share of the step's N trees (the same weights, bit for bit, as in one process)."""
    n = len(layouts) if total is None else total
    out = []
    for L in layouts:
        m = L.num_model_tokens
        w = 1.0 / (n * m) if m else 0.0
        out.append(torch.where(L.loss_mask, torch.tensor(w, dtype=torch.float32), torch.tensor(0.0)))
    return out


def gae(rewards: torch.Tensor, values: torch.Tensor, gamma: float = 1.0, lam: float = 1.0) -> torch.Tensor:
    """[n] GAE advantages of one trajectory of n steps (the value after the last step is 0)."""
    n = rewards.numel()
    adv = torch.zeros(n, dtype=torch.float64)
    running = 0.0
    for k in range(n - 1, -1, -1):
        nxt = float(values[k + 1]) if k + 1 < n else 0.0
        delta = float(rewards[k]) + gamma * nxt - float(values[k])
        running = delta + gamma * lam * running
        adv[k] = running
    return adv


def ppo_advantages(
    layout: TreeLayout,
    values: torch.Tensor,
    path_rewards: Sequence[float],
    *,
    gamma: float = 1.0,
    lam: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-branch GAE on one tree. `values` is [T] (used at trained tokens: V of the state before each).

    Returns (advantages [T], returns [T]) float32, 0 off the trained tokens; see the module docstring for
    how tokens shared by several paths are defined."""
    if len(path_rewards) != len(layout.path_tokens):
        raise ValueError(f"{len(path_rewards)} path rewards for {len(layout.path_tokens)} paths")
    values = values.detach().double().cpu()
    adv_sum = torch.zeros(layout.num_tokens, dtype=torch.float64)
    ret_sum = torch.zeros(layout.num_tokens, dtype=torch.float64)
    count = torch.zeros(layout.num_tokens, dtype=torch.float64)
    for toks, reward in zip(layout.path_tokens, path_rewards, strict=True):
        steps = toks[layout.loss_mask[toks]]
        if steps.numel() == 0:
            continue
        r = torch.zeros(steps.numel(), dtype=torch.float64)
        r[-1] = reward
        a = gae(r, values[steps], gamma, lam)
        adv_sum[steps] += a
        ret_sum[steps] += a + values[steps]
        count[steps] += 1
    seen = count > 0
    adv = torch.zeros(layout.num_tokens, dtype=torch.float64)
    ret = torch.zeros(layout.num_tokens, dtype=torch.float64)
    adv[seen] = adv_sum[seen] / count[seen]
    ret[seen] = ret_sum[seen] / count[seen]
    return adv.float(), ret.float()
