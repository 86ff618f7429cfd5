"""Tree statistics, per rollout and aggregated over many.

The three token counts that decide what training costs:

- `tokens_per_call`: every call as a separate sample (sum of prompt + output over all calls);
- `tokens_paths`: every kept root-to-leaf path as a sample (what sequence packing would forward);
- `tokens_unique`: every kept tree token once (what tree packing forwards; the floor).

`tokens_unique <= tokens_paths <= tokens_per_call` always holds: each kept path is the sequence of a
distinct kept call. The ratios between them say how much tree packing saves. Aggregates sum the counts
and recompute the ratios from the sums (not an average of ratios).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harnessrl.trace.tree import TraceTree

_SUMMED = (
    "calls",
    "retokenized",
    "merged_duplicates",
    "logprob_mismatch",
    "nodes",
    "kept_nodes",
    "roots",
    "leaves",
    "live_leaves",
    "dead_leaves",
    "over_branching_dropped",
    "branch_points",
    "tokens_per_call",
    "tokens_paths",
    "tokens_unique",
    "tokens_unique_all",
    "model_tokens_kept",
)


def _ratio(a: int, b: int) -> float:
    return a / b if b else 0.0


def _ratios(s: dict[str, Any]) -> None:
    s["ratio_per_call_to_unique"] = _ratio(s["tokens_per_call"], s["tokens_unique"])
    s["ratio_paths_to_unique"] = _ratio(s["tokens_paths"], s["tokens_unique"])
    s["ratio_per_call_to_paths"] = _ratio(s["tokens_per_call"], s["tokens_paths"])


def tree_stats(tree: TraceTree) -> dict[str, Any]:
    """Counts for one rollout (plain JSON-able values)."""
    nodes = tree.nodes
    depth_nodes = [0] * len(nodes)
    for n in nodes:
        depth_nodes[n.node_id] = 1 + (depth_nodes[n.parent] if n.parent >= 0 else 0)
    kinds = Counter(c.kind for c in tree.calls)
    kept = [n for n in nodes if n.kept]
    paths_tokens = 0
    for leaf in tree.kept_leaves:
        paths_tokens += nodes[leaf].start + len(nodes[leaf].tokens)
    s: dict[str, Any] = {
        "calls": len(tree.calls),
        "calls_by_kind": dict(sorted(kinds.items())),
        "segments_by_kind": dict(sorted(Counter(seg.kind for seg in tree.segments).items())),
        "retokenized": sum(1 for c in tree.calls if c.render == "retokenized"),
        "merged_duplicates": sum(1 for c in tree.calls if c.merged_with is not None),
        "logprob_mismatch": sum(1 for c in tree.calls if c.logprob_mismatch),
        "nodes": len(nodes),
        "kept_nodes": len(kept),
        "roots": len(tree.roots),
        "leaves": sum(1 for n in nodes if not n.children),
        "live_leaves": len(tree.kept_leaves),
        "dead_leaves": len(tree.dead_leaves),
        "over_branching_dropped": sum(1 for c in tree.calls if c.reason == "over_branching"),
        "depth_nodes": max(depth_nodes, default=0),
        "depth_tokens": max((n.start + len(n.tokens) for n in nodes), default=0),
        "branch_points": sum(1 for n in nodes if len(n.children) > 1),
        "max_children": max((len(n.children) for n in nodes), default=0),
        "tokens_per_call": sum(c.prompt_len + c.output_len for c in tree.calls),
        "tokens_paths": paths_tokens,
        "tokens_unique": sum(len(n.tokens) for n in kept),
        "tokens_unique_all": sum(len(n.tokens) for n in nodes),
        "model_tokens_kept": sum(sum(n.model_mask) for n in kept),
        "filter_reason": tree.filter_reason,
    }
    _ratios(s)
    return s


def aggregate_stats(per_rollout: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum the counts over rollouts, take maxima of depth and fan-out, count filter reasons and the
    rollouts that hold at least one segment of each kind (`rollouts_with_segment`)."""
    out: dict[str, Any] = {"rollouts": len(per_rollout)}
    for key in _SUMMED:
        out[key] = sum(int(s.get(key, 0)) for s in per_rollout)
    for key in ("depth_nodes", "depth_tokens", "max_children"):
        out[key] = max((int(s.get(key, 0)) for s in per_rollout), default=0)
    kinds: Counter[str] = Counter()
    segments: Counter[str] = Counter()
    holding: Counter[str] = Counter()
    filtered: Counter[str] = Counter()
    for s in per_rollout:
        kinds.update(s.get("calls_by_kind", {}))
        segments.update(s.get("segments_by_kind", {}))
        holding.update(k for k, n in s.get("segments_by_kind", {}).items() if n)
        if s.get("filter_reason"):
            filtered[str(s["filter_reason"])] += 1
    out["calls_by_kind"] = dict(sorted(kinds.items()))
    out["segments_by_kind"] = dict(sorted(segments.items()))
    out["rollouts_with_segment"] = dict(sorted(holding.items()))
    out["filtered"] = dict(sorted(filtered.items()))
    _ratios(out)
    return out
