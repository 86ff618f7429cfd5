"""The piecewise encoder gives exactly the tokenizer's ids, caches pieces, and falls back when unsure."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from pieced_text import pieced_text

from harnessrl.chat.encode import SegmentEncoder
from harnessrl.chat.tokenizers import qwen3_tokenizer


@pytest.fixture(scope="module")
def tok() -> Any:
    return qwen3_tokenizer()


_PIECES = [
    "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<think>", "<tool_response>",
    "<|im_", "<tool",
    "\n", "\n\n", " ",
    "e\u0301",  # decomposed é: NFC normalisation must act the same piecewise
    "\u0301",
    "Hello", " world", "123", "{}",
]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(pieced_text(_PIECES, other_chars=6, parts=14))
def test_piecewise_equals_whole_text_encoding(tok: Any, text: str) -> None:
    enc = SegmentEncoder(tok)
    expected = list(tok.encode(text, add_special_tokens=False))
    assert enc.encode(text) == expected
    assert enc.encode(text) == expected  # second time from the cache


def test_cache_is_bounded_and_reused(tok: Any) -> None:
    enc = SegmentEncoder(tok, max_chars=20)
    assert enc.exact
    assert enc.encode("<|im_start|>system\nYou are here.<|im_end|>") == [
        151644,
        8948,
        198,
        2610,
        525,
        1588,
        13,
        151645,
    ]
    assert list(enc._cache) == ["system\nYou are here."]
    enc.encode("<|im_start|>abc<|im_end|>")
    assert list(enc._cache) == ["abc"]  # the older 20-char piece was evicted to stay within 20 chars
    assert enc._chars == 3
    enc.encode("x" * 21)
    assert list(enc._cache) == ["abc"]  # longer than the whole budget: encoded, not cached


class StripTokenizer:
    """The Qwen3 tokenizer claiming an added token that strips spaces: the shortcut must switch off."""

    def __init__(self, tok: Any) -> None:
        from tokenizers import AddedToken

        self._tok = tok
        self.added_tokens_decoder = {1: AddedToken("<x>", lstrip=True)}
        self.calls = 0

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        self.calls += 1
        return list(self._tok.encode(text, add_special_tokens=add_special_tokens))

    @property
    def backend_tokenizer(self) -> Any:
        return self._tok.backend_tokenizer


def test_falls_back_to_the_tokenizer_when_not_provably_exact(tok: Any) -> None:
    fake = StripTokenizer(tok)
    enc = SegmentEncoder(fake)
    assert not enc.exact
    assert enc.encode("<|im_start|>hi") == [151644, 6023]
    assert fake.calls == 1
