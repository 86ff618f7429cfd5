"""Reuse of the KV cache of earlier requests whose token ids a new prompt starts with.

An agent's call k re-sends call k-1's prompt and output (token-in-token-out keeps those ids exact)
plus a tool result; GRPO groups send the same first prompt several times. Prefilling only the part
after the longest common prefix with a finished sequence turns an O(history) prefill into an
O(new tokens) one. Keys/values at position j depend only on ids[: j + 1], so any common prefix of
a stored sequence is valid for the new prompt.

Entries are kept least-recently-used under a budget in tokens; an entry that is a prefix of a newer
one is dropped as redundant. The engine clears the cache when weights change (stale keys/values
would silently mix two policies). Lookups scan the entries (a handful) with one vectorised compare each.
Left out: a radix tree sharing memory between entries, and partial-page reuse inside a running batch.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import torch

KV = list[tuple[torch.Tensor, torch.Tensor]]
"""Per layer (keys, values), each (1, H, T, D)."""


@dataclass
class _Entry:
    ids_T: torch.Tensor
    kv: KV


def common_prefix(a_T: torch.Tensor, b_T: torch.Tensor) -> int:
    """Length of the longest common prefix of two 1-D id tensors."""
    n = min(a_T.shape[0], b_T.shape[0])
    differ = (a_T[:n] != b_T[:n]).nonzero()
    return int(differ[0, 0]) if differ.numel() else n


class PrefixCache:
    """LRU store of (ids, keys/values) with a total budget in tokens (0 disables it)."""

    def __init__(self, max_tokens: int, min_match: int = 8) -> None:
        self.max_tokens = max_tokens
        self.min_match = min_match
        """Shorter common prefixes are not worth a lookup hit (prefill them normally)."""
        self._entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()
        self.tokens = 0

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        self._entries.clear()
        self.tokens = 0

    def lookup(self, prompt_ids: list[int]) -> tuple[int, KV] | None:
        """(n, keys/values of the first n prompt tokens) for the longest reusable prefix, or None.

        n is at most len(prompt) - 1: the last prompt token must be fed to get next-token logits.
        """
        if not self._entries or len(prompt_ids) < 2:
            return None
        prompt_T = torch.tensor(prompt_ids, dtype=torch.long)
        best, best_key = 0, None
        for key, entry in self._entries.items():
            n = common_prefix(prompt_T, entry.ids_T)
            if n > best:
                best, best_key = n, key
        best = min(best, len(prompt_ids) - 1)
        if best_key is None or best < self.min_match:
            return None
        self._entries.move_to_end(best_key)
        kv = self._entries[best_key].kv
        return best, [(k[:, :, :best], v[:, :, :best]) for k, v in kv]

    def insert(self, ids: list[int], kv: KV) -> None:
        """Store a finished sequence's keys/values (already copied out of any batch buffer)."""
        if len(ids) > self.max_tokens or len(ids) < self.min_match:
            return
        key = tuple(ids)
        ids_T = torch.tensor(ids, dtype=torch.long)
        for old in [k for k in self._entries if len(k) <= len(key) and key[: len(k)] == k]:
            self.tokens -= len(old)
            del self._entries[old]
        self._entries[key] = _Entry(ids_T, kv)
        self.tokens += len(ids)
        while self.tokens > self.max_tokens:
            old, _ = self._entries.popitem(last=False)
            self.tokens -= len(old)
