"""The full prefix tree of one rollout (every node, kept or dropped, with the reason) and its TreeSample.

`TraceTree` is what `build_trace` returns: all nodes parents-first, one `TraceCall` per model call with
its kind and fate, the kept leaves and the rollout-level filter. It is for rendering and statistics;
`TraceTree.to_sample()` cuts it down to the shared `TreeSample` that `rl/` packs (kept nodes only,
re-indexed parents-first, kept root-to-leaf paths, the reward).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from harnessrl.types import SegmentInfo, SegmentKind, TreeNode, TreeSample

CallKind = Literal["main", "compacted", "compaction_request", "subagent", "replay", "empty"]
"""main = the main thread; compacted = a main-thread call after it restarted from a summary (and the
calls extending it); compaction_request = a call that asks for a summary; subagent = a call whose
system prompt, tool set or requested model differs from the main thread's; replay = answered by the
proxy from an earlier call's response (its output was not sampled for this prompt); empty = no output."""

DropReason = Literal[
    "dead_leaf", "subagent", "compaction", "replay", "empty_output", "over_branching", "no_trainable_calls"
]


@dataclass
class TraceCall:
    """One model call as the tree sees it: where it landed and whether it is trained."""

    call_id: str
    index: int
    kind: CallKind
    group: str
    """system digest | tools digest | requested model: the key that separates sub-agents."""
    render: str
    """The proxy's render mode (spliced / rendered / retokenized)."""
    prompt_len: int
    output_len: int
    matched: int = 0
    """Tokens shared with the calls inserted before it (its attach depth)."""
    end_node: int = -1
    """TraceTree.nodes index where its sequence ends (-1 when it had no tokens at all)."""
    merged_with: str | None = None
    """call_id of an earlier call with the identical token sequence."""
    leaf: bool = False
    """No other call extends its sequence."""
    dead: bool = False
    """A leaf whose output nobody consumed and that is not its thread's final answer."""
    kept: bool = False
    reason: DropReason | None = None
    """Why it is not trained (None when kept)."""
    restart: bool = False
    """A main-group call that starts a new segment: it dropped earlier model turns instead of extending
    them (a compaction restart, or a retokenized continuation)."""
    logprob_mismatch: bool = False
    """output_logprobs did not have one entry per output id (padded with 0.0 / truncated)."""
    delivered: bool = True
    """False when the harness never received the output (the client disconnected, or the call failed)."""
    extends: int = -1
    """Main-group calls: index of the main-thread call it shares the longest prefix with (-1: none)."""
    forks: bool = False
    """Main-group calls: it does not hold the whole sequence of that call (a new branch)."""
    segment: int = -1
    """Index into TraceTree.segments (-1: replays and empty calls belong to none)."""


@dataclass
class Segment:
    """A run of calls with one role in the rollout, and its link to the main trajectory (`segments.py`)."""

    segment_id: int
    kind: SegmentKind
    calls: list[str] = field(default_factory=list)
    """call_ids, in time order."""
    parent: int = -1
    """See `types.SegmentInfo.parent`."""
    origin_call: str | None = None
    """See `types.SegmentInfo.origin_call`."""
    tool_call: str | None = None
    """subagent: the id of the tool call that started it (`name#k` when the harness gave none)."""
    answer_call: str | None = None
    """See `types.SegmentInfo.answer_call`."""
    used: bool = False
    """See `types.SegmentInfo.used` (found from token ids: `segments.carries`; True for main)."""

    def info(self) -> SegmentInfo:
        return SegmentInfo(
            kind=self.kind, parent=self.parent, origin_call=self.origin_call,
            answer_call=self.answer_call, used=self.used,
        )  # fmt: skip


@dataclass
class TraceNode:
    """One node of the full tree; `start` is the depth (tokens before it on its root path)."""

    node_id: int
    parent: int
    start: int
    tokens: list[int]
    model_mask: list[bool]
    logprobs: list[float]
    call_ids: list[str]
    """Calls whose sequence ends at this node."""
    children: list[int] = field(default_factory=list)
    creator: str = ""
    """call_id of the earliest call that passes through this node."""
    kept: bool = False
    drop_reason: DropReason | None = None


@dataclass
class TraceTree:
    """Everything known about one rollout's calls as a prefix tree (a forest: one entry per root)."""

    rollout_id: str
    group_id: str
    reward: float | None
    nodes: list[TraceNode]
    """All nodes, parents before children."""
    calls: list[TraceCall]
    """In time order (the order they were inserted)."""
    roots: list[int]
    main_group: str
    kept_leaves: list[int]
    """Node ids of the kept (live) leaves, in node order."""
    dead_leaves: list[int]
    """Node ids of leaves dropped as dead."""
    filter_reason: DropReason | None = None
    """Set when the whole rollout is dropped: only `no_trainable_calls` (over-branching drops calls,
    never the rollout)."""
    stats: dict[str, Any] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    """Main trajectory, compactions and sub-agents, in order of their first call."""

    def path_to(self, node_id: int) -> list[int]:
        """Node ids from the root down to `node_id`."""
        out: list[int] = []
        while node_id >= 0:
            out.append(node_id)
            node_id = self.nodes[node_id].parent
        out.reverse()
        return out

    def call_tokens(self, node_id: int) -> list[int]:
        """The token sequence of the root-to-node path."""
        return [t for n in self.path_to(node_id) for t in self.nodes[n].tokens]

    def kept_paths(self) -> list[list[int]]:
        """Each kept root-to-leaf path, as full-tree node ids."""
        return [self.path_to(leaf) for leaf in self.kept_leaves]

    def to_sample(self) -> TreeSample:
        """The trainable part: kept nodes re-indexed parents-first, kept paths, reward (0.0 if unset).

        A filtered rollout gives a sample with no nodes and no paths; `stats["filter_reason"]` says why.
        """
        remap: dict[int, int] = {}
        nodes: list[TreeNode] = []
        segment_of = {c.call_id: c.segment for c in self.calls}
        for node in self.nodes:
            if not node.kept:
                continue
            remap[node.node_id] = len(nodes)
            nodes.append(
                TreeNode.model_construct(
                    node_id=len(nodes),
                    parent=remap[node.parent] if node.parent >= 0 else -1,
                    tokens=node.tokens,
                    model_mask=node.model_mask,
                    logprobs=node.logprobs,
                    call_ids=node.call_ids,
                    segment=max(segment_of.get(node.creator, 0), 0),
                )
            )
        paths = [[remap[n] for n in path] for path in self.kept_paths()]
        return TreeSample.model_construct(
            rollout_id=self.rollout_id,
            group_id=self.group_id,
            reward=0.0 if self.reward is None else float(self.reward),
            nodes=nodes,
            paths=paths,
            stats=dict(self.stats),
            segments=[seg.info() for seg in self.segments],
        )
