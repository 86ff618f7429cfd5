"""Value models for PPO: a linear head on the policy's backbone, or on a separate critic backbone.

The value of the state before trained token t is read at t's predicting row (`pred_index[t]`), the
same row whose logits give t's log-prob, so values and log-probs line up token by token. The head is
zero-initialised (values start at 0, so the first advantages are the raw returns).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from harnessrl.rl.forward import Attention, packed_hidden
from harnessrl.rl.packing import PackedBatch


class ValueModel(nn.Module):
    """V(state) = head(hidden). `backbone` is a separate causal LM (critic) or None (share the policy's)."""

    def __init__(self, hidden_size: int, backbone: Any | None = None) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def from_rows(self, rows: torch.Tensor) -> torch.Tensor:
        """[M] values from [M, H] hidden rows."""
        out: torch.Tensor = self.head(rows.to(self.head.weight.dtype)).squeeze(-1)
        return out

    def on_batch(
        self, batch: PackedBatch, attention: Attention, policy_rows: torch.Tensor | None
    ) -> torch.Tensor:
        """[M] values at the trained tokens of `batch`; uses `policy_rows` when the backbone is shared."""
        if self.backbone is None:
            if policy_rows is None:
                raise ValueError("a shared-backbone value head needs the policy's hidden rows")
            return self.from_rows(policy_rows)
        hidden = packed_hidden(self.backbone, batch, attention)
        pos = batch.model_positions().to(hidden.device)
        return self.from_rows(hidden[batch.pred_index.to(hidden.device)[pos]])
