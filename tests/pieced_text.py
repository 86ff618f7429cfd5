"""Text for the chat layer's property tests: the pieces that must survive any border (special tokens,
tags, their prefixes, whitespace) mixed with short arbitrary text."""

from __future__ import annotations

from hypothesis import strategies as st


def pieced_text(pieces: list[str], *, other_chars: int, parts: int) -> st.SearchStrategy[str]:
    """Up to `parts` parts joined, each one of `pieces` or arbitrary text of up to `other_chars`."""
    part = st.one_of(st.sampled_from(pieces), st.text(max_size=other_chars))
    return st.lists(part, max_size=parts).map("".join)
