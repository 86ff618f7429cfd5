"""A KV cache for continuous batching: preallocated, growable, left-padded rows.

transformers' DynamicCache appends each step with `torch.cat`, copying the whole cache: at 2k tokens x
8 rows x 30 layers (SmolLM2) that is ~0.4 s per decode step on one CPU core, as much as the forward
itself. `GrowingLayer` writes new keys/values into spare capacity instead (growing by a quarter, at
least `SPARE` slots, when full), so a step copies only the new token. The batch-level operations the
engine needs work on every layer: `merge_rows` (left-pad two caches to a common width and stack their
rows) and `select_rows` (keep some rows, drop leading columns that are padding for all of them).

Padding columns hold zeros, never uninitialised memory: a masked score still multiplies its value
vector by a zero weight, and 0 x NaN would poison the row.
Left out: sliding-window and recurrent layers (the engine only serves full-attention models).
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import Cache, DynamicLayer

SPARE = 64
"""Fewest spare token slots a (re)allocation leaves; growth is otherwise 25%, so at 8k tokens a full
cache wastes at most ~2k slots while the copies on growth stay amortised O(1) per token."""


def _capacity(needed: int) -> int:
    return needed + max(needed // 4, SPARE)


class GrowingLayer(DynamicLayer):
    """One layer's keys/values, shape (B, H, T, D), stored in a buffer with spare room along T."""

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        super().lazy_initialization(key_states, value_states)
        self.length = 0
        self.buf_k = key_states.new_zeros((*key_states.shape[:2], 0, key_states.shape[-1]))
        self.buf_v = value_states.new_zeros((*value_states.shape[:2], 0, value_states.shape[-1]))

    def set_buffers(self, buf_k: torch.Tensor, buf_v: torch.Tensor, length: int) -> None:
        self.buf_k, self.buf_v, self.length = buf_k, buf_v, length
        self.keys, self.values = buf_k[:, :, :length], buf_v[:, :, :length]

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self.length + key_states.shape[-2]
        if end > self.buf_k.shape[-2]:
            cap = _capacity(end)
            self.buf_k, self.buf_v = (
                _with_capacity(self.buf_k, self.length, cap),
                _with_capacity(self.buf_v, self.length, cap),
            )
        self.buf_k[:, :, self.length : end] = key_states
        self.buf_v[:, :, self.length : end] = value_states
        self.set_buffers(self.buf_k, self.buf_v, end)
        return self.buf_k[:, :, :end], self.buf_v[:, :, :end]


def _with_capacity(buf: torch.Tensor, length: int, cap: int) -> torch.Tensor:
    out = buf.new_zeros((*buf.shape[:2], cap, buf.shape[-1]))
    out[:, :, :length] = buf[:, :, :length]
    return out


class GrowingCache(Cache):
    """A Cache whose layers (created lazily, one per decoder layer) are GrowingLayers."""

    def __init__(self) -> None:
        super().__init__(layer_class_to_replicate=GrowingLayer)


def merge_rows(batch: GrowingCache, new: GrowingCache, width: int) -> None:
    """Stack `new`'s rows under `batch`'s, both right-aligned (left-padded) to `width` columns."""
    for mine, theirs in zip(batch.layers, new.layers, strict=True):
        assert isinstance(mine, GrowingLayer) and isinstance(theirs, GrowingLayer)
        cap = max(_capacity(width), mine.buf_k.shape[-2])
        merged = []
        for a, b in ((mine.buf_k, theirs.buf_k), (mine.buf_v, theirs.buf_v)):
            b1 = a.shape[0]
            out = a.new_zeros((b1 + b.shape[0], a.shape[1], cap, a.shape[-1]))
            out[:b1, :, width - mine.length : width] = a[:, :, : mine.length]
            out[b1:, :, width - theirs.length : width] = b[:, :, : theirs.length]
            merged.append(out)
        mine.set_buffers(merged[0], merged[1], width)


def select_rows(cache: GrowingCache, rows: list[int], cut: int) -> None:
    """Keep `rows` (in that order) and drop the first `cut` columns of every layer."""
    for layer in cache.layers:
        assert isinstance(layer, GrowingLayer)
        idx = torch.tensor(rows, dtype=torch.long, device=layer.buf_k.device)
        layer.set_buffers(layer.buf_k[idx, :, cut:], layer.buf_v[idx, :, cut:], layer.length - cut)


def row_kv(cache: GrowingCache, row: int, length: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """A copy of one row's real (unpadded, right-aligned) keys/values: per layer (1, H, length, D)."""
    out = []
    for layer in cache.layers:
        assert isinstance(layer, GrowingLayer)
        end = layer.length
        sl = slice(end - length, end)
        out.append((layer.buf_k[row : row + 1, :, sl].clone(), layer.buf_v[row : row + 1, :, sl].clone()))
    return out


def cache_from(kv: list[tuple[torch.Tensor, torch.Tensor]]) -> GrowingCache:
    """A one-row GrowingCache holding these per-layer keys/values (copied into fresh buffers)."""
    cache = GrowingCache()
    for i, (k, v) in enumerate(kv):
        cache.update(k, v, i)
    return cache
