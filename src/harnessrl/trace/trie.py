"""A compressed (radix) trie over token sequences: the data structure under a rollout's prefix tree.

Each call of a rollout is inserted as one sequence (prompt ids + output ids). A node holds a run of
tokens; its children are keyed by their first token, so finding where a call attaches costs one dict
lookup per node on the path plus one C-level list comparison per node (`seq[a:b] == tokens`). Only the
node where a call diverges needs the exact mismatch position, found by comparing doubling slices. The
cost of an insertion is therefore linear in the call's tokens with a small per-node Python overhead,
and never compares a call against earlier calls pairwise.

Invariants kept by `insert`:

- every inserted sequence ends exactly at a node boundary (a node is split where a call ends inside
  it), so a call's sequence is always the tokens of a root-to-node path;
- a node's tokens are all traversed by the same set of calls (calls diverge only at node boundaries),
  so keeping or dropping whole nodes is exact;
- `mask[i]` is 1 when token i is the output of some call inserted with `model_output=True`; it never
  goes back to 0. `logprobs[i]` is the sampling log-prob recorded by the first call that generated
  token i at that position (0.0 for environment tokens).

Left out on purpose: deletion (trees are built once per rollout and thrown away) and any notion of
call kinds or filters (see `classify.py`); this module only knows tokens.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence


class TrieNode:
    """A run of tokens under its parent. `start` is the depth (tokens from the root) of its first token."""

    __slots__ = (
        "children",
        "creator",
        "ends",
        "logprobs",
        "mask",
        "nid",
        "parent",
        "start",
        "thread_call",
        "tokens",
    )

    def __init__(
        self,
        nid: int,
        parent: TrieNode | None,
        start: int,
        tokens: list[int],
        mask: bytearray,
        logprobs: list[float],
        creator: int,
    ) -> None:
        self.nid = nid
        self.parent = parent
        self.start = start
        self.tokens = tokens
        self.mask = mask
        self.logprobs = logprobs
        self.creator = creator
        """Index of the call that first inserted these tokens (the earliest call through this node)."""
        self.children: dict[int, TrieNode] = {}
        self.ends: list[int] = []
        """Indices of the calls whose sequence ends exactly at the end of this node."""
        self.thread_call = -1
        """Latest main-thread call passing through this node (maintained by the classifier)."""

    @property
    def end(self) -> int:
        """Depth just past this node's last token (the length of the root-to-node sequence)."""
        return self.start + len(self.tokens)


def _common_prefix(a: list[int], a0: int, b: list[int], n: int) -> int:
    """Length of the common prefix of a[a0:a0+n] and b[:n], comparing doubling slices in C."""
    k = 0
    step = 32
    while k < n:
        m = min(step, n - k)
        if a[a0 + k : a0 + k + m] == b[k : k + m]:
            k += m
            step *= 2
        elif m <= 8:
            while k < n and a[a0 + k] == b[k]:
                k += 1
            return k
        else:
            step = max(m // 4, 8)
    return k


class PrefixTrie:
    """A forest of token runs; `roots` are the children of an implicit empty root."""

    def __init__(self) -> None:
        self._root = TrieNode(-1, None, 0, [], bytearray(), [], -1)
        self.nodes: list[TrieNode] = []
        """Every node, in creation order (ids are indices here; not parents-first after splits)."""
        self.call_end: dict[int, TrieNode] = {}
        """Call index -> the node its sequence ends at (kept current across splits)."""
        self._last: tuple[list[int], list[TrieNode], list[int]] = ([], [], [])
        """The previous insertion's (sequence, path, node end depths): the next call usually extends it."""

    @property
    def roots(self) -> list[TrieNode]:
        """Top-level nodes, in creation order."""
        return sorted(self._root.children.values(), key=lambda n: n.nid)

    def is_root(self, node: TrieNode) -> bool:
        """Whether `node` hangs directly under the implicit empty root."""
        return node.parent is self._root

    def insert(
        self, seq: list[int], prompt_len: int, logprobs: Sequence[float], call: int, model_output: bool
    ) -> tuple[list[TrieNode], int]:
        """Insert one call's sequence (`seq[prompt_len:]` is its output); return (path, matched depth).

        `path` is the root-to-end list of nodes the call traverses; `matched` is how many of its tokens
        were already in the trie (its longest common prefix with every earlier sequence). Output tokens
        are marked as model tokens (with `logprobs`, one per output token) only when `model_output`.
        `seq` must not be empty.
        """
        node, pos, path, ends = self._resume(seq, prompt_len, logprobs, model_output)
        n = len(seq)
        while pos < n:
            child = node.children.get(seq[pos])
            if child is None:
                break
            toks = child.tokens
            m = len(toks)
            if pos + m <= n and seq[pos : pos + m] == toks:
                k = m
            else:
                k = _common_prefix(seq, pos, toks, min(m, n - pos))
                self._split(child, k)
            if model_output and pos + k > prompt_len:
                self._mark_model(child, pos, k, prompt_len, logprobs)
            path.append(child)
            node = child
            pos += k
            ends.append(pos)
        matched = pos
        if pos < n:
            path.append(self._new_leaf(node, seq, pos, prompt_len, logprobs, call, model_output))
            ends.append(n)
        end = path[-1]
        end.ends.append(call)
        self.call_end[call] = end
        self._last = (seq, path, ends)
        return path, matched

    def _resume(
        self, seq: list[int], prompt_len: int, logprobs: Sequence[float], model_output: bool
    ) -> tuple[TrieNode, int, list[TrieNode], list[int]]:
        """(node, depth, path, end depths) past the nodes `seq` shares whole with the previous path.

        Its common prefix with the previous sequence is found with C-level list comparisons, and
        every node of the previous path that lies within it is traversed by `seq` too (a radix trie has
        one path per prefix), so `insert` goes on from there instead of walking those nodes one by
        one: the per-call cost no longer grows with the depth of a thread that extends itself.
        """
        last, last_path, ends = self._last
        if not last_path:
            return self._root, 0, [], []
        n = min(len(seq), len(last))
        same = seq[:n] == last if n == len(last) else seq == last[:n]
        shared = n if same else _common_prefix(seq, 0, last, n)
        j = bisect_right(ends, shared)
        if j == 0:
            return self._root, 0, [], []
        path = last_path[:j]
        if model_output and ends[j - 1] > prompt_len:
            for node in path[bisect_right(ends, prompt_len) :]:
                self._mark_model(node, node.start, len(node.tokens), prompt_len, logprobs)
        return path[-1], ends[j - 1], path, ends[:j]

    def _new_leaf(
        self,
        parent: TrieNode,
        seq: list[int],
        pos: int,
        prompt_len: int,
        logprobs: Sequence[float],
        call: int,
        model_output: bool,
    ) -> TrieNode:
        length = len(seq) - pos
        env = min(max(prompt_len - pos, 0), length) if model_output else length
        mask = bytearray(env) + b"\x01" * (length - env)
        lps = [0.0] * env
        if env < length:
            lps.extend(logprobs[pos + env - prompt_len :])
        leaf = TrieNode(len(self.nodes), parent, pos, seq[pos:], mask, lps, call)
        self.nodes.append(leaf)
        parent.children[seq[pos]] = leaf
        return leaf

    def _split(self, node: TrieNode, k: int) -> None:
        """Cut `node` after its first k tokens (0 < k < len); the tail keeps the children and call ends."""
        if k >= len(node.tokens):
            return
        tail = TrieNode(
            len(self.nodes),
            node,
            node.start + k,
            node.tokens[k:],
            node.mask[k:],
            node.logprobs[k:],
            node.creator,
        )
        tail.thread_call = node.thread_call
        self.nodes.append(tail)
        tail.children = node.children
        for child in tail.children.values():
            child.parent = tail
        tail.ends = node.ends
        for call in tail.ends:
            self.call_end[call] = tail
        node.tokens = node.tokens[:k]
        node.mask = node.mask[:k]
        node.logprobs = node.logprobs[:k]
        node.children = {tail.tokens[0]: tail}
        node.ends = []

    @staticmethod
    def _mark_model(node: TrieNode, pos: int, k: int, prompt_len: int, logprobs: Sequence[float]) -> None:
        """Mark node tokens [a, k) that are this call's output as model tokens, where not already."""
        a = max(prompt_len - pos, 0)
        mask = node.mask
        if mask.find(0, a, k) == -1:
            return
        for i in range(a, k):
            if not mask[i]:
                mask[i] = 1
                node.logprobs[i] = logprobs[pos + i - prompt_len]

    def model_count(self, end: TrieNode, lo: int, hi: int) -> int:
        """Model tokens at depths [lo, hi) on the root-to-`end` path."""
        total = 0
        node: TrieNode | None = end
        while node is not None and node is not self._root and node.end > lo:
            a = max(lo - node.start, 0)
            b = min(hi - node.start, len(node.tokens))
            if b > a:
                total += node.mask.count(1, a, b)
            node = node.parent
        return total

    def preorder(self) -> list[TrieNode]:
        """All nodes, parents before children, siblings in creation order."""
        out: list[TrieNode] = []
        stack = list(reversed(self.roots))
        while stack:
            node = stack.pop()
            out.append(node)
            stack.extend(sorted(node.children.values(), key=lambda c: c.nid, reverse=True))
        return out
