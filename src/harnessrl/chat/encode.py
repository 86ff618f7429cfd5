"""Exact text -> ids encoding with a cache of the text between added tokens.

A tokenizer splits text at its added tokens (`<|im_start|>`, `<|im_end|>`, `<tool_call>`, ...) before it
normalises, pre-tokenizes and runs BPE, and each piece is encoded on its own. So encoding the pieces
separately and joining them gives exactly the ids of encoding the whole text, and a piece seen before
(the system prompt and tool block that every session of a batch shares, 10k+ tokens for Claude Code)
need not be encoded again. Missing pieces are encoded in one batch call to the Rust tokenizer.

The shortcut is only taken when it is provably the same: every added token matches verbatim (no
lstrip/rstrip/single_word, not normalised) and the tokenizer has a Rust backend; otherwise every call
goes to `tokenizer.encode`. The cache holds at most `max_chars` characters of text (LRU).

ASCII pieces skip the normaliser. Unicode normalisation (NFC, NFD, NFKC, NFKD) leaves ASCII text as it
is, so when the tokenizer's normaliser is only such forms, an ASCII piece (`str.isascii`, a flag CPython
keeps on every string: no scan) is encoded by a twin of the backend without a normaliser: the same ids,
and 15-25% less CPU per token on code and tool output (Qwen3's NFC, `benchmarks/proxy_traffic.py
--stages`), where the normaliser rebuilds the text with per-character alignments. The twin is checked
against the backend on probe texts when it is made; any difference keeps every piece on the backend.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections import OrderedDict
from typing import Any


class SegmentEncoder:
    """`encode(text) == tokenizer.encode(text, add_special_tokens=False)`, with piece caching."""

    def __init__(self, tokenizer: Any, *, max_chars: int = 8_000_000) -> None:
        self.tokenizer = tokenizer
        self.max_chars = max_chars
        added: dict[int, Any] = dict(getattr(tokenizer, "added_tokens_decoder", {}) or {})
        self.backend: Any = getattr(tokenizer, "backend_tokenizer", None)
        verbatim = all(not (a.lstrip or a.rstrip or a.single_word or a.normalized) for a in added.values())
        self.exact = bool(added) and verbatim and self.backend is not None
        """True when the piecewise shortcut is exact (see the module docstring)."""
        self._added = {a.content: i for i, a in added.items()}
        longest_first = sorted(self._added, key=len, reverse=True)
        self._split = re.compile("(" + "|".join(re.escape(t) for t in longest_first) + ")") if added else None
        # Without offsets (tokenizers >= 0.21): the same ids, ~25% less CPU per new token.
        self._encode_batch: Any = getattr(self.backend, "encode_batch_fast", None) or getattr(
            self.backend, "encode_batch", None
        )
        self._cache: OrderedDict[str, list[int]] = OrderedDict()
        self._chars = 0
        self._lock = threading.Lock()

    @functools.cached_property
    def _ascii_batch(self) -> Any:
        """`encode_batch(_fast)` of the backend without its normaliser (module docstring), or None;
        made on first use, once per backend in a process (copying a 150k-token vocabulary takes
        ~0.3 s)."""
        if not self.exact:
            return None
        with _TWINS_LOCK:
            held = _TWINS.get(id(self.backend))
            if held is None or held[0] is not self.backend:
                held = _TWINS[id(self.backend)] = (self.backend, _ascii_twin(self.backend))
        return held[1]

    def warm_up(self) -> None:
        """Make the ASCII twin now rather than on the first call."""
        _ = self._ascii_batch

    def encode(self, text: str) -> list[int]:
        """Token ids of `text` with added tokens recognised, no BOS/EOS."""
        if not self.exact or self._split is None:
            return list(self.tokenizer.encode(text, add_special_tokens=False))
        parts = self._split.split(text)  # even indices: plain text, odd: an added token
        pieces = self._lookup([p for p in parts[0::2] if p])
        out: list[int] = []
        for i, part in enumerate(parts):
            if i % 2:
                out.append(self._added[part])
            elif part:
                out.extend(pieces[part])
        return out

    def _lookup(self, texts: list[str]) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        with self._lock:
            for t in texts:
                ids = self._cache.get(t)
                if ids is not None:
                    self._cache.move_to_end(t)
                    found[t] = ids
        missing = list(dict.fromkeys(t for t in texts if t not in found))
        if not missing:
            return found
        if self._ascii_batch is not None:
            plain = [t for t in missing if t.isascii()]
            other = [t for t in missing if not t.isascii()]
            missing = plain + other
            encodings = self._ascii_batch(plain, add_special_tokens=False) if plain else []
            if other:
                encodings += self._encode_batch(other, add_special_tokens=False)
        else:
            encodings = self._encode_batch(missing, add_special_tokens=False)
        with self._lock:
            for t, enc in zip(missing, encodings, strict=True):
                found[t] = list(enc.ids)
                if len(t) <= self.max_chars and t not in self._cache:
                    self._cache[t] = found[t]
                    self._chars += len(t)
            while self._chars > self.max_chars:
                old, _ = self._cache.popitem(last=False)
                self._chars -= len(old)
        return found


_TWINS: dict[int, tuple[Any, Any]] = {}
"""id(backend) -> (backend, its ASCII twin's batch encoder or None); holds the backend, so the id stays
its own."""
_TWINS_LOCK = threading.Lock()
_ASCII_PRESERVING = frozenset({"NFC", "NFD", "NFKC", "NFKD"})
"""Normalisers that leave every ASCII string as it is (Unicode normal forms)."""
_PROBES = (
    "",
    " ",
    "Hello world",
    "  def f(x):\n\treturn x + 1\n\n\n",
    "I'm here, you're there; they'll see 12345 (x) [y] {z} $ % ^ & * ~ ` | \\ / ? < > = + -",
    "\r\n\r\n  \t  trailing   ",
    '{"name": "Bash", "arguments": {"command": "ls -la /tmp && echo \'done\'"}}',
    "".join(chr(c) for c in range(128)),
)


def _ascii_twin(backend: Any) -> Any:
    """The batch encoder of a copy of `backend` without its normaliser, when that normaliser leaves
    ASCII text unchanged and the copy encodes the probe texts exactly as `backend` does; else None
    (no normaliser, another one, no serialisation, or any difference)."""
    try:
        spec = json.loads(backend.to_str())
        norm = spec.get("normalizer")
        forms = norm.get("normalizers", []) if norm and norm.get("type") == "Sequence" else [norm]
        if not norm or any(not f or f.get("type") not in _ASCII_PRESERVING for f in forms):
            return None
        from tokenizers import Tokenizer

        twin = Tokenizer.from_str(backend.to_str())
        twin.normalizer = None
        twin.no_truncation()
        twin.no_padding()
        batch = getattr(twin, "encode_batch_fast", None) or twin.encode_batch
        mine = [e.ids for e in batch(list(_PROBES), add_special_tokens=False)]
        theirs = [e.ids for e in backend.encode_batch(list(_PROBES), add_special_tokens=False)]
        return batch if mine == theirs else None
    except Exception:  # a backend that cannot be copied this way keeps the plain path
        return None
