"""Forward passes of a transformers causal LM over packed trees (and, for reference, path by path).

`packed_forward` runs the model's decoder once over a PackedBatch with a custom 4-D attention mask and
explicit position ids, then applies the LM head only at the rows that predict trained tokens
(`pred_index` of each loss-masked token). transformers 5.x returns a 4-D mask as-is from
`create_causal_mask` (`_preprocess_mask_arguments`: "If the mask is already 4D, simply return
as-is"), so:

- attention="sdpa": the mask is a dense bool [1, 1, T, T] (True = may attend), handed to
  `torch.nn.functional.scaled_dot_product_attention`; the model must be in `sdpa` mode.
- attention="flex": the mask is a FlexAttention BlockMask built from `k <= q < subtree_end[k]`; the
  model must be in `flex_attention` mode (`set_attention(model, "flex")`). Its cost skips fully masked
  blocks (sibling branches), where SDPA pays for the whole T x T square. On CPU (torch 2.13) Flex is
  forward-only (no backward kernel) and compiles on first use (~50 s); SDPA is the default.
- attention="tree": chunked tree attention (`tree_attention.py`): each chunk of ~128 query rows runs
  SDPA against only the keys it may see (its ancestors), so masked sibling branches cost nothing;
  the model must be in `tree_sdpa` mode (`set_attention(model, "tree")`). Exact like the others; on
  CPU 1.2x (8 leaves) to 1.8x (32 leaves) faster than the dense mask (`benchmarks/packing.py`).

The LM head runs on `chunk` rows at a time under activation checkpointing (`token_logprobs`), so the
[M, vocab] logits never exist at once. Left out: models with logit soft-capping or scaled logits
(Gemma-2 style): we apply only the LM head and the sampling temperature.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

from harnessrl.rl import tree_attention
from harnessrl.rl.packing import PackedBatch, TreeLayout, tree_attention_mask

Attention = Literal["sdpa", "flex", "tree"]
_IMPL: dict[str, str] = {"sdpa": "sdpa", "flex": "flex_attention", "tree": tree_attention.IMPL}


@dataclass
class PackedOutputs:
    """Per trained token of a PackedBatch (M of them, in row order)."""

    logprobs: torch.Tensor
    """[M] log-prob of each trained token under the (temperature-scaled) model."""
    entropy: torch.Tensor | None
    """[M] entropy of the predicting distribution (detached), when asked for."""
    hidden: torch.Tensor | None
    """[M, H] last hidden state at each predicting row (for a value head), when asked for."""


def set_attention(model: Any, attention: Attention) -> None:
    """Switch a transformers model to the attention implementation that `packed_forward` needs."""
    if attention == "tree":
        tree_attention.register()
    model.set_attn_implementation(_IMPL[attention])


def _mask(batch: PackedBatch, attention: Attention, device: torch.device) -> Any:
    end = batch.subtree_end.to(device)
    if attention == "sdpa":
        return tree_attention_mask(end)[None, None]
    if attention == "tree":
        return end[None, None, None]  # 4-D, so transformers passes it on; the plan carries the mask
    from torch.nn.attention.flex_attention import create_block_mask

    def mask_mod(b: Any, h: Any, q: Any, k: Any) -> Any:
        return (k <= q) & (q < end[k])

    n = batch.num_tokens
    return create_block_mask(mask_mod, B=None, H=None, Q_LEN=n, KV_LEN=n, device=str(device))


def packed_hidden(model: Any, batch: PackedBatch, attention: Attention = "sdpa") -> torch.Tensor:
    """[T, H] last hidden states of the decoder over the packed row, tree-masked."""
    impl = model.config._attn_implementation
    if impl != _IMPL[attention]:
        raise ValueError(
            f"model attention is {impl!r}; packed_forward(attention={attention!r}) needs {_IMPL[attention]!r}"
        )
    device = next(model.parameters()).device
    extra: dict[str, Any] = {}
    if attention == "tree":
        extra["tree_plan"] = tree_attention.plan_tree_attention(batch.subtree_end.to(device))
    out = model.get_decoder()(
        input_ids=batch.input_ids[None].to(device),
        position_ids=batch.position_ids[None].to(device),
        attention_mask=_mask(batch, attention, device),
        use_cache=False,
        **extra,
    )
    hidden: torch.Tensor = out.last_hidden_state[0]
    return hidden


def _head_logprobs(
    head: Any, rows: torch.Tensor, targets: torch.Tensor, temperature: float, entropy: bool
) -> tuple[torch.Tensor, torch.Tensor | None]:
    logits = head(rows).float()
    if temperature != 1.0:
        logits = logits / temperature
    logp_all = F.log_softmax(logits, dim=-1)
    logp = logp_all.gather(-1, targets[:, None]).squeeze(-1)
    if not entropy:
        return logp, None
    with torch.no_grad():
        ent = -(logp_all.exp() * logp_all).sum(-1)
    return logp, ent


def token_logprobs(
    model: Any,
    rows: torch.Tensor,
    targets: torch.Tensor,
    temperature: float = 1.0,
    entropy: bool = False,
    chunk: int = 1024,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-prob of `targets` [M] from hidden `rows` [M, H] through the LM head; entropy [M] if asked.

    Rows go through the head `chunk` at a time; with gradients on, each chunk is recomputed in the
    backward pass (activation checkpointing), so at most [chunk, vocab] logits are alive at once."""
    head = model.get_output_embeddings()
    targets = targets.to(rows.device)
    logps, ents = [], []
    for start in range(0, max(1, rows.shape[0]), chunk):
        r, t = rows[start : start + chunk], targets[start : start + chunk]
        if torch.is_grad_enabled() and rows.shape[0] > chunk:
            lp, en = checkpoint(_head_logprobs, head, r, t, temperature, entropy, use_reentrant=False)
        else:
            lp, en = _head_logprobs(head, r, t, temperature, entropy)
        logps.append(lp)
        if en is not None:
            ents.append(en)
    return torch.cat(logps), (torch.cat(ents) if entropy else None)


def packed_forward(
    model: Any,
    batch: PackedBatch,
    *,
    attention: Attention = "sdpa",
    temperature: float = 1.0,
    entropy: bool = False,
    keep_hidden: bool = False,
) -> PackedOutputs:
    """Log-probs of every trained token of `batch`, each predicted from its parent token's row."""
    hidden = packed_hidden(model, batch, attention)
    pos = batch.model_positions().to(hidden.device)
    rows = hidden[batch.pred_index.to(hidden.device)[pos]]  # [M, H]
    logp, ent = token_logprobs(model, rows, batch.input_ids.to(hidden.device)[pos], temperature, entropy)
    return PackedOutputs(logprobs=logp, entropy=ent, hidden=rows if keep_hidden else None)


def path_logprobs(model: Any, layout: TreeLayout, path: int, temperature: float = 1.0) -> torch.Tensor:
    """Reference: run one root-to-leaf path as a plain causal sequence; log-prob per path token.

    Returns [L] aligned with `layout.path_tokens[path]` (0.0 at the first token, which has no parent)."""
    device = next(model.parameters()).device
    idx = layout.path_tokens[path]
    ids = layout.input_ids[idx].to(device)
    logits = model(input_ids=ids[None], use_cache=False).logits[0].float()
    if temperature != 1.0:
        logits = logits / temperature
    logp = F.log_softmax(logits[:-1], dim=-1).gather(-1, ids[1:, None]).squeeze(-1)
    return torch.cat([torch.zeros(1, device=device), logp])
