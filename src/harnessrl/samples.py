"""Prefix-tree samples: what trace/ produces and rl/ consumes (re-exported by `harnessrl.types`).

A TreeSample is the trainable part of one rollout's prefix tree: kept nodes parents-first, kept
root-to-leaf paths, the reward and, since segments exist (`harnessrl.trace.segments`), the rollout's
segments (main trajectory, compactions, sub-agents) with the segment of each node. Plain pydantic
records, nothing heavy imported.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class TreeNode(BaseModel):
    """A node of a rollout's prefix tree: a run of tokens under its parent."""

    node_id: int
    parent: int
    """Index of the parent node in TreeSample.nodes, -1 for a root."""
    tokens: list[int]
    model_mask: list[bool]
    """True for tokens the model sampled (trained), False for environment tokens."""
    logprobs: list[float]
    """Rollout (sampling) log-prob per token; 0.0 for environment tokens."""
    call_ids: list[str] = Field(default_factory=list)
    """Calls whose output ends in this node."""
    segment: int = 0
    """Index into TreeSample.segments of the segment whose call created this node (0: the main
    trajectory, or no segments recorded)."""


SegmentKind = Literal["main", "compaction", "subagent"]
"""main = the main trajectory (one segment per restart from a summary); compaction = calls asking
the model to summarise its own context; subagent = one sub-agent instance started by a main-trajectory
tool call."""


class SegmentInfo(BaseModel):
    """One segment of a rollout as rl/ sees it: its kind and its link to the main trajectory."""

    kind: SegmentKind
    parent: int = -1
    """Segment index it hangs from: a compaction's or sub-agent's main segment; for a main segment
    after a compaction, the compaction whose summary it ran on (-1: none)."""
    origin_call: str | None = None
    """compaction: the main-trajectory call whose context the summary replaced; subagent: the
    main-trajectory call whose tool call started it."""
    answer_call: str | None = None
    """compaction: the first call that ran on its summary; subagent: the main-trajectory call its
    answer came back in."""
    used: bool = True
    """compaction: a later call ran on its summary; subagent: its final answer reached the main
    trajectory."""


class TreeSample(BaseModel):
    """The trainable part of one rollout: kept nodes (parents before children), kept paths, reward."""

    rollout_id: str
    group_id: str
    reward: float
    nodes: list[TreeNode]
    paths: list[list[int]]
    """Each kept root-to-leaf path as a list of node indices."""
    stats: dict[str, Any] = Field(default_factory=dict)
    segments: list[SegmentInfo] = Field(default_factory=list)
    """The rollout's segments (`TreeNode.segment` indexes them); empty: everything is main."""
