"""Tree packing: each unique token of a rollout's prefix tree laid out once, with a tree attention mask.

A TreeSample's kept nodes (the union of its kept paths) are laid out depth-first: a node's tokens, then
each child's subtree in node-index order. In that order the tokens that can see a token `k` (its
descendants, and itself) form one contiguous range `[k, subtree_end[k])`, so the whole tree attention
mask is carried by one integer per token:

    query q may attend to key k   <=>   k <= q < subtree_end[k]

which is exactly "a token sees its ancestors, itself included". Position ids are each token's depth
in its own root-to-leaf path (0 for a root's first token), so every token gets the same rotary
position it had when the engine sampled it.

Targets. The last token of a branch-point node has several "next" tokens (one per child), so a single
target id per position does not exist. Instead each token `t` records `pred_index[t]`: the position
whose logits predict `t` (its parent token: the previous token of its node, or the last token of the
parent node). "log-prob of token t" is `log_softmax(logits[pred_index[t]])[input_ids[t]]`. Only model
tokens with a parent are in the loss (`loss_mask`); a root's first token has nothing to be predicted from.

Several trees go into one packed row (batch size 1, trees back to back, block-diagonal by
construction of `subtree_end`), chosen first-fit up to a token budget. A tree longer than the budget
gets a row of its own: trees are never split (splitting would cut tokens off from their ancestors).

Across trees. The trees of one step share most of their prompts (one harness configuration's system
prompt and tools; a GRPO group's task prompt). `share_prefixes` merges trees into forests in which
such a prefix of environment tokens is laid out once (model tokens never merge), each forest up to the
token budget; the trainer does this by default (`trainer.share_prefixes`).

Left out: padding to a multiple of a block size (FlexAttention pads internally) and sorting trees by
length before first-fit (callers may sort; first-fit keeps their order, which keeps runs reproducible).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from harnessrl.types import TreeSample


@dataclass(frozen=True)
class TokenRow:
    """Per-token columns of a laid-out row: one tree (`TreeLayout`) or several back to back
    (`PackedBatch`). Every tensor is 1-D of length T; positions are the row's own."""

    input_ids: torch.Tensor
    """[T] int64 token ids."""
    position_ids: torch.Tensor
    """[T] int64 depth of each token in its own root-to-leaf path."""
    pred_index: torch.Tensor
    """[T] int64 position whose logits predict this token; -1 for a root's first token."""
    subtree_end: torch.Tensor
    """[T] int64 exclusive end of the token's depth-first subtree (see the module docstring)."""
    loss_mask: torch.Tensor
    """[T] bool: a model-sampled token with a parent (trained)."""
    rollout_logprobs: torch.Tensor
    """[T] float32 sampling log-prob (0.0 for environment tokens)."""

    @property
    def num_tokens(self) -> int:
        return int(self.input_ids.numel())


@dataclass(frozen=True)
class TreeLayout(TokenRow):
    """One tree's unique tokens in depth-first order (CPU tensors)."""

    node_index: torch.Tensor
    """[T] int64 index into TreeSample.nodes of the node each token belongs to."""
    path_tokens: list[torch.Tensor]
    """Per kept path, the layout positions of its tokens, root to leaf."""

    @property
    def num_model_tokens(self) -> int:
        return int(self.loss_mask.sum())


def _kept_children(sample: TreeSample) -> tuple[list[int], dict[int, list[int]]]:
    """Roots and child lists of the nodes on kept paths; validates that each path is a parent chain."""
    kept: set[int] = set()
    for p, path in enumerate(sample.paths):
        for i, n in enumerate(path):
            want = -1 if i == 0 else path[i - 1]
            if not 0 <= n < len(sample.nodes) or sample.nodes[n].parent != want:
                raise ValueError(
                    f"{sample.rollout_id}: path {p} is not a root-to-leaf parent chain at node {n}"
                )
        kept.update(path)
    children: dict[int, list[int]] = {n: [] for n in kept}
    roots: list[int] = []
    for n in sorted(kept):
        parent = sample.nodes[n].parent
        (roots if parent == -1 else children[parent]).append(n)
    return roots, children


def layout_tree(sample: TreeSample) -> TreeLayout:
    """Lay out the kept nodes of `sample` depth-first (each unique token once)."""
    roots, children = _kept_children(sample)
    ids: list[int] = []
    pos: list[int] = []
    pred: list[int] = []
    mask: list[bool] = []
    lps: list[float] = []
    node_of: list[int] = []
    node_start: dict[int, int] = {}
    node_last: dict[int, int] = {}  # last token position of a node (inherited through empty nodes)
    node_depth: dict[int, int] = {}  # depth of the node's last token (-1 before a root)
    order: list[int] = []
    stack = list(reversed(roots))
    while stack:
        n = stack.pop()
        order.append(n)
        node = sample.nodes[n]
        if len(node.model_mask) != len(node.tokens) or len(node.logprobs) != len(node.tokens):
            raise ValueError(f"{sample.rollout_id}: node {n} has mismatched tokens/model_mask/logprobs")
        prev = -1 if node.parent == -1 else node_last[node.parent]
        depth = -1 if node.parent == -1 else node_depth[node.parent]
        node_start[n] = len(ids)
        for tok, is_model, lp in zip(node.tokens, node.model_mask, node.logprobs, strict=True):
            depth += 1
            ids.append(tok)
            pos.append(depth)
            pred.append(prev)
            mask.append(bool(is_model) and prev >= 0)
            lps.append(float(lp) if is_model else 0.0)
            node_of.append(n)
            prev = len(ids) - 1
        node_last[n] = prev
        node_depth[n] = depth
        stack.extend(reversed(children[n]))
    # A node's subtree ends where its last descendant ends (children come after parents in `order`).
    subtree_end = [0] * len(ids)
    node_end: dict[int, int] = {}
    for n in reversed(order):
        start = node_start[n]
        end = max([start + len(sample.nodes[n].tokens)] + [node_end[c] for c in children[n]])
        node_end[n] = end
        subtree_end[start : start + len(sample.nodes[n].tokens)] = [end] * len(sample.nodes[n].tokens)
    path_tokens = [
        torch.tensor(
            [i for n in path for i in range(node_start[n], node_start[n] + len(sample.nodes[n].tokens))],
            dtype=torch.long,
        )
        for path in sample.paths
    ]
    return TreeLayout(
        input_ids=torch.tensor(ids, dtype=torch.long),
        position_ids=torch.tensor(pos, dtype=torch.long),
        pred_index=torch.tensor(pred, dtype=torch.long),
        subtree_end=torch.tensor(subtree_end, dtype=torch.long),
        loss_mask=torch.tensor(mask, dtype=torch.bool),
        rollout_logprobs=torch.tensor(lps, dtype=torch.float32),
        node_index=torch.tensor(node_of, dtype=torch.long),
        path_tokens=path_tokens,
    )


def first_fit(sizes: Sequence[int], budget: int) -> list[list[int]]:
    """Group item indices into bins of total size <= budget, first-fit in the given order.

    An item larger than the budget gets a bin of its own (never split)."""
    if budget <= 0:
        raise ValueError(f"token budget must be positive, got {budget}")
    bins: list[list[int]] = []
    room: list[int] = []
    for i, s in enumerate(sizes):
        for b, r in enumerate(room):
            if s <= r:
                bins[b].append(i)
                room[b] -= s
                break
        else:
            bins.append([i])
            room.append(budget - s)
    return bins


@dataclass(frozen=True)
class PackedBatch(TokenRow):
    """Several trees back to back in one row (batch size 1)."""

    rollout_index: torch.Tensor
    """[T] int64 index of the tree (item) each token came from, in the caller's numbering."""
    items: list[int]
    """The caller's item indices packed here, in row order."""
    offsets: list[int]
    """Start of each packed tree in the row."""
    extras: dict[str, torch.Tensor] = field(default_factory=dict)
    """Per-token algorithm arrays ([T] each): advantages, token weights, old/ref log-probs, returns..."""

    def model_positions(self) -> torch.Tensor:
        """[M] row positions of the trained tokens, in row order."""
        return self.loss_mask.nonzero().squeeze(-1)

    def model_extra(self, name: str) -> torch.Tensor:
        """[M] the extra array `name` at trained tokens."""
        return self.extras[name][self.loss_mask]


def pack(
    layouts: Sequence[TreeLayout],
    items: Sequence[int],
    extras: dict[str, Sequence[torch.Tensor]] | None = None,
) -> PackedBatch:
    """Concatenate the trees `layouts[i] for i in items` into one row.

    `extras[name][i]` is a [T_i] tensor aligned with `layouts[i]` (e.g. per-token advantages)."""
    offsets: list[int] = []
    off = 0
    for i in items:
        offsets.append(off)
        off += layouts[i].num_tokens

    def cat(get: list[torch.Tensor]) -> torch.Tensor:
        return torch.cat(get) if get else torch.zeros(0)

    sel = [layouts[i] for i in items]
    pred = [torch.where(L.pred_index >= 0, L.pred_index + o, -1) for L, o in zip(sel, offsets, strict=True)]
    return PackedBatch(
        input_ids=cat([L.input_ids for L in sel]).long(),
        position_ids=cat([L.position_ids for L in sel]).long(),
        pred_index=cat(pred).long(),
        subtree_end=cat([L.subtree_end + o for L, o in zip(sel, offsets, strict=True)]).long(),
        loss_mask=cat([L.loss_mask for L in sel]).bool(),
        rollout_logprobs=cat([L.rollout_logprobs for L in sel]).float(),
        rollout_index=cat(
            [torch.full((L.num_tokens,), i, dtype=torch.long) for L, i in zip(sel, items, strict=True)]
        ),
        items=list(items),
        offsets=offsets,
        extras={name: cat([arrs[i] for i in items]) for name, arrs in (extras or {}).items()},
    )


def pack_by_budget(
    layouts: Sequence[TreeLayout], budget: int, extras: dict[str, Sequence[torch.Tensor]] | None = None
) -> list[PackedBatch]:
    """First-fit the trees into rows of at most `budget` tokens (a bigger tree gets its own row)."""
    bins = first_fit([L.num_tokens for L in layouts], budget)
    return [pack(layouts, b, extras) for b in bins]


def tree_attention_mask(subtree_end: torch.Tensor) -> torch.Tensor:
    """[T, T] bool, True where query q may attend key k: k <= q < subtree_end[k]."""
    idx = torch.arange(subtree_end.numel(), device=subtree_end.device)
    q = idx[:, None]
    k = idx[None, :]
    return (k <= q) & (q < subtree_end[None, :])


def share_prefixes(
    layouts: Sequence[TreeLayout], budget: int, extras: dict[str, Sequence[torch.Tensor]] | None = None
) -> tuple[list[TreeLayout], dict[str, list[torch.Tensor]]]:
    """Merge trees into forests in which an environment-token prefix shared by several trees is laid
    out once; each forest holds at most `budget` tokens (a tree bigger than that stays alone).

    The trees of one step share most of their prompts (the system prompt and tool block of one
    harness configuration, the task prompt within a GRPO group), so training forwards far fewer
    tokens. Exact: a token is shared only with an identical root-to-token prefix, so its context,
    depth and logits are those it had in its own tree; model tokens are never shared (each keeps its
    tree's sampling log-prob and its per-token arrays). Trees are visited in order of their leading
    tokens, so trees with equal prompts land in the same forest. `extras` ([T_i] arrays per tree)
    are mapped onto the forests; at a shared environment token the first tree's value is kept (the
    arrays are only read at trained tokens). The forests' `node_index` is the source tree's index."""
    if budget <= 0:
        raise ValueError(f"token budget must be positive, got {budget}")
    extras = extras or {}
    for name, arrays in extras.items():
        if len(arrays) != len(layouts):
            raise ValueError(f"extra {name!r}: {len(arrays)} arrays for {len(layouts)} trees")
    order = prefix_order(layouts)
    tries: list[_Forest] = []
    for i in order:
        if not tries or (tries[-1].size and tries[-1].size + tries[-1].added(layouts[i]) > budget):
            tries.append(_Forest())
        tries[-1].add(layouts[i], i)
    forests: list[TreeLayout] = []
    out: dict[str, list[torch.Tensor]] = {name: [] for name in extras}
    for trie in tries:
        layout, trees, where = trie.layout(layouts)
        forests.append(layout)
        for name, arrays in extras.items():
            out[name].append(_gather(arrays, trees, where))
    return forests, out


def prefix_order(layouts: Sequence[TreeLayout]) -> list[int]:
    """Tree indices by leading tokens (then index): trees with equal prompts come together."""
    return sorted(range(len(layouts)), key=lambda i: (layouts[i].input_ids[:256].tolist(), i))


def _gather(per_tree: Sequence[torch.Tensor], trees: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """out[q] = per_tree[trees[q]][where[q]]."""
    out = torch.zeros(trees.numel(), dtype=per_tree[0].dtype if per_tree else torch.float32)
    for t in trees.unique().tolist():
        sel = trees == t
        out[sel] = per_tree[t][where[sel]]
    return out


class _Forest:
    """A token trie over trees' root-to-leaf paths (see `share_prefixes`)."""

    def __init__(self) -> None:
        self.size = 0
        self.children: list[dict[tuple[int, int], int]] = []
        self.roots: dict[tuple[int, int], int] = {}
        self.parent: list[int] = []
        self.source: list[tuple[int, int]] = []  # (tree, position) of each trie token's first occurrence
        self.paths: list[list[int]] = []

    @staticmethod
    def _keys(layout: TreeLayout, tree: int) -> list[tuple[int, int]]:
        # trained (model) tokens are never shared: their key carries the tree
        return [
            (t, tree if m else -1)
            for t, m in zip(layout.input_ids.tolist(), layout.loss_mask.tolist(), strict=True)
        ]

    def added(self, layout: TreeLayout) -> int:
        """How many tokens adding `layout` would add to the trie."""
        keys = self._keys(layout, -2)
        new: set[int] = set()
        for path in layout.path_tokens:
            here: dict[tuple[int, int], int] | None = self.roots
            for p in path.tolist():
                nxt = here.get(keys[p]) if here is not None else None
                if nxt is None:
                    new.add(p)
                    here = None
                else:
                    here = self.children[nxt]
        return len(new)

    def add(self, layout: TreeLayout, tree: int) -> None:
        keys = self._keys(layout, tree)
        for path in layout.path_tokens:
            here, seq = self.roots, list[int]()
            for p in path.tolist():
                idx = here.get(keys[p])
                if idx is None:
                    idx = here[keys[p]] = len(self.parent)
                    self.parent.append(seq[-1] if seq else -1)
                    self.children.append({})
                    self.source.append((tree, p))
                    self.size += 1
                seq.append(idx)
                here = self.children[idx]
            self.paths.append(seq)

    def layout(self, layouts: Sequence[TreeLayout]) -> tuple[TreeLayout, torch.Tensor, torch.Tensor]:
        """The forest laid out depth first (children in insertion order), and each position's source
        tree and position in it."""
        pos_of = [0] * len(self.parent)
        order: list[int] = []
        stack = list(reversed(self.roots.values()))
        while stack:
            n = stack.pop()
            pos_of[n] = len(order)
            order.append(n)
            stack.extend(reversed(self.children[n].values()))
        end = [0] * len(order)
        for n in reversed(order):  # a subtree ends where its last descendant ends
            kids = self.children[n].values()
            end[pos_of[n]] = max([pos_of[n] + 1] + [end[pos_of[c]] for c in kids])
        source = [self.source[n] for n in order]
        pred = [-1 if self.parent[n] == -1 else pos_of[self.parent[n]] for n in order]
        trees = torch.tensor([t for t, _ in source], dtype=torch.long)
        where = torch.tensor([p for _, p in source], dtype=torch.long)

        def gather(name: str) -> torch.Tensor:
            return _gather([getattr(L, name) for L in layouts], trees, where)

        return (
            TreeLayout(
                input_ids=gather("input_ids"),
                position_ids=gather("position_ids"),
                pred_index=torch.tensor(pred, dtype=torch.long),
                subtree_end=torch.tensor(end, dtype=torch.long),
                loss_mask=gather("loss_mask"),
                rollout_logprobs=gather("rollout_logprobs"),
                node_index=trees,
                path_tokens=[torch.tensor([pos_of[n] for n in seq], dtype=torch.long) for seq in self.paths],
            ),
            trees,
            where,
        )
