"""Credit below the rollout: tree-aware advantages over a group's merged tree, and segments' own credit.

**Tree-aware advantages** (`train.advantage.mode = "tree"`). The kept paths of a group's rollouts
(one task, one harness configuration) are merged into one token trie: a token position of any
rollout is the trie node of its whole prefix, so rollouts that sampled the same tokens after the
same prompt share nodes. For a node n, S(n) is the set of rollouts through it and
V(n) = mean_{i in S(n)} R_i the return of its subtree (each rollout counted once, however many of
its paths pass). Where rollouts part (a child c of n with S(c) smaller than S(n)), the tokens after
the branch point get

    A(c) = V(c) - V(n),

the return of their subtree against the mean return of the sibling subtrees (each rollout counted
once, which is V(n)); at the root V is the group's mean reward, the GRPO baseline. A node whose
rollouts are its parent's (the same rollouts go on, also where one rollout's own tree branches)
keeps its parent's advantage. So a shared prefix gets V(prefix) - baseline, not the failure of one
branch below it, and along every path the advantages of its branches add up to R_i - mean: on a group
whose rollouts share no sampled token (no branching but where they part) every trained token of
rollout i gets R_i - mean, plain GRPO, bit for bit (the same float64 operations). GRPO divides by
the group's std + eps as it does per rollout. For PPO the value target of a token is V(n) of its
node instead of its own rollout's reward (the advantage is then V(n) - V_model, gamma = lam = 1).

**Segments** (`train.segments = "credited"`; `rl/` sees them as `TreeSample.segments` and each
node's `segment`). A compaction is credited with the outcome of the steps that ran on its summary:
under the rollout mode, its rollout's reward R against the mean (and std) of R over the group's
rollouts with a summary that was used, each rollout counted once however many summaries it made,
normalised like GRPO (with fewer than two such rollouts in the group there is no baseline of its own
kind, and it takes its rollout's advantage; when every rollout compacted this is the rollout's
GRPO advantage, as under `outcome`); under the
tree mode, the advantage of the step that resumed on it (already a comparison with the steps its
siblings took from the same point). A summary no step ran on gets 0. A sub-agent is
credited with its parent's advantage (that of the main-trajectory step whose tool call started it)
times whether its answer reached the main trajectory (1 or 0). PPO instead trains each segment's
tokens towards its own return: R, or 0 for a segment whose output was not used. Token weights stay
the rollout rule (`advantages.rollout_token_weights`): a rollout's tokens, segments included, share
1/N, so a rollout's weight does not grow with its number of segments.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from math import fsum

import torch

from harnessrl.rl.packing import TreeLayout
from harnessrl.types import TreeSample


@dataclass
class TokenCredit:
    """One tree's per-token values from its group's merged tree ([T] float64, 0 off the trained tokens)."""

    advantage: torch.Tensor
    """A(n) of each token's node (unnormalised)."""
    value: torch.Tensor
    """V(n): the mean return of the group's rollouts through the token's node."""


def group_mean(rewards: Sequence[float]) -> float:
    """The group baseline exactly as `advantages.grpo_advantages` computes it (float64 torch mean)."""
    return float(torch.tensor([float(r) for r in rewards], dtype=torch.float64).mean())


class _MergedTrie:
    """Token trie over the layouts of one group: per node the rollouts through it and their rewards."""

    def __init__(self) -> None:
        self.children: list[dict[int, int]] = [{}]
        self.parent: list[int] = [-1]
        self.count: list[int] = [0]
        self.total: list[list[float]] = [[]]
        self.seen: list[int] = [-1]

    def add(self, layout: TreeLayout, rollout: int, reward: float) -> list[int]:
        """Insert every position of `layout` (parents come first); returns each position's node."""
        node_of: list[int] = []
        ids, pred = layout.input_ids.tolist(), layout.pred_index.tolist()
        for tok, p in zip(ids, pred, strict=True):
            up = 0 if p < 0 else node_of[p]
            node = self.children[up].get(tok)
            if node is None:
                node = self.children[up][tok] = len(self.parent)
                self.children.append({})
                self.parent.append(up)
                self.count.append(0)
                self.total.append([])
                self.seen.append(-1)
            if self.seen[node] != rollout:
                self.seen[node] = rollout
                self.count[node] += 1
                self.total[node].append(reward)
            node_of.append(node)
        return node_of


def tree_credit(rewards_G: Sequence[float], layouts_G: Sequence[TreeLayout]) -> list[TokenCredit]:
    """TokenCredit of each tree of one group (module docstring)."""
    trie = _MergedTrie()
    nodes = [trie.add(L, i, float(r)) for i, (L, r) in enumerate(zip(layouts_G, rewards_G, strict=True))]
    group = len(rewards_G)
    baseline = group_mean(rewards_G)
    value = [baseline] + [0.0] * (len(trie.parent) - 1)
    adv = [0.0] * len(trie.parent)
    for n in range(1, len(trie.parent)):  # parents were created before their children
        up = trie.parent[n]
        value[n] = baseline if trie.count[n] == group else fsum(trie.total[n]) / trie.count[n]
        up_count = group if up == 0 else trie.count[up]
        adv[n] = adv[up] if trie.count[n] == up_count else value[n] - value[up]
    out = []
    for L, node_of in zip(layouts_G, nodes, strict=True):
        index = torch.tensor(node_of, dtype=torch.long)
        a = torch.tensor(adv, dtype=torch.float64)[index]
        v = torch.tensor(value, dtype=torch.float64)[index]
        zero = torch.zeros_like(a)
        out.append(TokenCredit(torch.where(L.loss_mask, a, zero), torch.where(L.loss_mask, v, zero)))
    return out


def segment_of_tokens(sample: TreeSample, layout: TreeLayout) -> torch.Tensor:
    """[T] int64: the segment index of each token (its node's `segment`)."""
    per_node = torch.tensor([n.segment for n in sample.nodes] or [0], dtype=torch.long)
    return per_node[layout.node_index]


def segment_used(sample: TreeSample) -> list[bool]:
    """Per segment: whether it earns the rollout's return (the main trajectory, or its output was used)."""
    return [s.kind == "main" or s.used for s in sample.segments]


def _at_call(sample: TreeSample, layout: TreeLayout, adv: torch.Tensor, call_id: str | None) -> float | None:
    """The advantage at the last trained token of the node where `call_id` ends (None: not kept)."""
    node = next((n.node_id for n in sample.nodes if call_id is not None and call_id in n.call_ids), None)
    if node is None:
        return None
    where = ((layout.node_index == node) & layout.loss_mask).nonzero()
    return float(adv[int(where[-1])]) if where.numel() else None


def _compaction_baselines(
    samples: Sequence[TreeSample], eps: float, normalize: bool
) -> dict[str, tuple[float, float]]:
    """Group -> (mean, scale) of R over its rollouts with a used compaction (each rollout once, however
    many it made); only groups with two or more such rollouts."""
    returns: dict[str, list[float]] = defaultdict(list)
    for s in samples:
        if any(seg.kind == "compaction" and seg.used for seg in s.segments):
            returns[s.group_id].append(s.reward)
    out = {}
    for g, rs in returns.items():
        if len(rs) >= 2:
            r = torch.tensor(rs, dtype=torch.float64)
            scale = float(r.std(unbiased=False)) + eps if normalize else 1.0
            out[g] = (float(r.mean()), scale if scale > 0 else 1.0)
    return out


def credited_advantages(
    samples: Sequence[TreeSample],
    layouts: Sequence[TreeLayout],
    advantages: Sequence[torch.Tensor],
    scalars: Sequence[float],
    *,
    eps: float = 1e-6,
    normalize_std: bool = True,
    tree: bool = False,
) -> list[torch.Tensor]:
    """GRPO's [T] advantages with each non-main segment's tokens set to its own credit (module doc).

    `advantages` are the per-tree arrays before crediting (rollout or tree mode), `scalars` each
    rollout's GRPO advantage (the fallback when a linked step was not kept)."""
    baselines = {} if tree else _compaction_baselines(samples, eps, normalize_std)
    out = []
    for s, L, adv, scalar in zip(samples, layouts, advantages, scalars, strict=True):
        adv = adv.clone()
        seg_T = segment_of_tokens(s, L)
        for k, seg in enumerate(s.segments):
            if seg.kind == "main":
                continue
            linked = seg.origin_call if seg.kind == "subagent" else seg.answer_call
            parent = _at_call(s, L, adv, linked)
            credit = scalar if parent is None else parent
            if seg.kind == "compaction" and s.group_id in baselines:
                mean, scale = baselines[s.group_id]
                credit = (s.reward - mean) / scale
            adv[(seg_T == k) & L.loss_mask] = float(credit) if seg.used else 0.0
        out.append(adv)
    return out


def weight_shares(
    samples: Sequence[TreeSample], layouts: Sequence[TreeLayout], advantages: Sequence[torch.Tensor]
) -> dict[str, float]:
    """How the step's loss weight falls: the share of the per-token weights 1/(N x M_i)
    (`advantages.rollout_token_weights`) on tokens of each segment kind, and on tokens whose
    advantage is 0 (trained towards nothing but still counted in M_i). Keys `weight/<kind>`
    (main, compaction, subagent) and `weight/zero_advantage`; they sum to 1 over the kinds."""
    n = len(samples)
    shares: dict[str, float] = defaultdict(float)
    for s, L, adv in zip(samples, layouts, advantages, strict=True):
        m = L.num_model_tokens
        if not m:
            continue
        seg_T = segment_of_tokens(s, L)[L.loss_mask]
        kinds = [seg.kind for seg in s.segments] or ["main"]
        for k, kind in enumerate(kinds):
            shares[f"weight/{kind}"] += int((seg_T == k).sum()) / (n * m)
        shares["weight/zero_advantage"] += int((adv[L.loss_mask] == 0).sum()) / (n * m)
    return {k: round(v, 6) for k, v in sorted(shares.items())}


def differing_share(
    samples: Sequence[TreeSample],
    layouts: Sequence[TreeLayout],
    a: Sequence[torch.Tensor],
    b: Sequence[torch.Tensor],
    tol: float = 1e-9,
) -> float:
    """The share of a step's loss weight (the per-token 1/(N x M_i) of `weight_shares`) on trained
    tokens whose advantage differs (by more than `tol`) between `a` and `b`, two estimators'
    advantages for the same batch."""
    n, total = len(samples), 0.0
    for L, x, y in zip(layouts, a, b, strict=True):
        m = L.num_model_tokens
        if m:
            total += int(((x - y).abs()[L.loss_mask] > tol).sum()) / (n * m)
    return round(total, 6)
