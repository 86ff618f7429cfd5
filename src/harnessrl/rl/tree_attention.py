"""Tree attention without the dense [T, T] mask: each chunk of query rows against only its ancestors.

In the depth-first layout (`packing.py`) query q may attend key k iff `k <= q < subtree_end[k]`. A
dense SDPA call pays for all T x T pairs although most of a branching tree's pairs are masked (a
token never sees a sibling branch). `TreePlan` cuts the row into chunks of consecutive query rows
(node-aligned where it can) and, for each chunk [a, b), keeps only the keys some row of it may see:
`k < b and subtree_end[k] > a` (the chunk's ancestors, gathered once per layer with one
`index_select`). Each chunk is then one SDPA call over [b - a, keys] with the exact tree mask
restricted to those keys, so the work is about the sum of the rows' path lengths instead of T^2.
Every key a row may attend is in its chunk's key set and the mask is the same predicate, so the
result equals the dense masked attention up to float summation order.

The implementation is registered with transformers' `AttentionInterface` as `tree_sdpa` (`register`,
called by `forward.set_attention`, so importing this module does not import transformers); `forward.py`
passes the plan as the `tree_plan` keyword (and a 4-D placeholder mask, which transformers hands on
as-is). Without a plan (a plain causal forward, e.g. `path_logprobs`) it is ordinary SDPA.
Left out: sliding-window layers and attention sinks (the dense path does not handle them either).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import torch
import torch.nn.functional as F

IMPL = "tree_sdpa"


@dataclass(frozen=True)
class TreePlan:
    """Query chunks of one packed row and, per chunk, the keys it needs and its [rows, keys] mask."""

    bounds: list[tuple[int, int]]
    keys: list[torch.Tensor | slice]
    """Key positions per chunk; a slice where they are contiguous (a view instead of a gather)."""
    masks: list[torch.Tensor]


def plan_tree_attention(subtree_end: torch.Tensor, chunk: int = 128) -> TreePlan:
    """Chunks of about `chunk` query rows (cut where subtree_end changes, i.e. at node starts, when one
    is near) with their ancestor keys and the exact tree mask between them."""
    end = subtree_end.long()
    n = int(end.numel())
    idx = torch.arange(n, device=end.device)
    cuts = [0]
    starts = (torch.nonzero(end[1:] != end[:-1]).squeeze(-1) + 1).tolist() if n > 1 else []
    si = 0
    while cuts[-1] < n:
        a = cuts[-1]
        limit = min(a + chunk, n)
        best = limit
        while si < len(starts) and starts[si] <= limit:
            if starts[si] > a + chunk // 2:
                best = starts[si]
            si += 1
        cuts.append(best if best > a else limit)
    bounds = list(pairwise(cuts))
    keys: list[torch.Tensor | slice] = []
    masks: list[torch.Tensor] = []
    for a, b in bounds:
        k = torch.nonzero(end[:b] > a).squeeze(-1)
        q = idx[a:b, None]
        first, last = int(k[0]), int(k[-1])  # never empty: row a sees itself
        keys.append(slice(first, last + 1) if last - first + 1 == k.numel() else k)
        masks.append((k[None, :] <= q) & (q < end[k][None, :]))
    return TreePlan(bounds=bounds, keys=keys, masks=masks)


def tree_sdpa_forward(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    tree_plan: TreePlan | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """[B, T, H, D] attention output: chunked tree attention with a plan, else plain SDPA."""
    from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward

    if tree_plan is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    groups = getattr(module, "num_key_value_groups", 1)
    key = repeat_kv(key, groups)
    value = repeat_kv(value, groups)
    outs = []
    for (a, b), k, m in zip(tree_plan.bounds, tree_plan.keys, tree_plan.masks, strict=True):
        if isinstance(k, slice):
            kc, vc = key[:, :, k], value[:, :, k]
        else:
            kc, vc = key.index_select(2, k), value.index_select(2, k)
        outs.append(
            F.scaled_dot_product_attention(
                query[:, :, a:b], kc, vc, attn_mask=m, dropout_p=dropout, scale=scaling
            )
        )
    return torch.cat(outs, dim=2).transpose(1, 2).contiguous(), None


def register() -> None:
    """Make `tree_sdpa` known to transformers (idempotent; `forward.set_attention` calls it)."""
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(IMPL, tree_sdpa_forward)
    AttentionMaskInterface.register(IMPL, sdpa_mask)
