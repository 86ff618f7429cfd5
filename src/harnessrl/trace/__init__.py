"""Prefix trees: a rollout's fragmented model calls rebuilt into trainable trajectories.

    from harnessrl.trace import build_trace, trace_rollout, aggregate_stats
    tree = trace_rollout(rollout, cfg.trace)     # TraceTree: every node, kept or dropped, and why
    sample = tree.to_sample()                    # TreeSample for rl/ (no nodes if tree.filter_reason)
    tree.stats                                   # per-rollout counts; aggregate_stats([...]) for many
    rollout = with_filter_status(rollout, tree)  # filtered:no_trainable_calls when nothing is kept

No torch here: records in, plain lists out.
"""

from harnessrl.trace.build import build_trace, trace_rollout, with_filter_status
from harnessrl.trace.stats import aggregate_stats, tree_stats
from harnessrl.trace.tree import CallKind, DropReason, TraceCall, TraceNode, TraceTree
from harnessrl.trace.trie import PrefixTrie

__all__ = [
    "CallKind",
    "DropReason",
    "PrefixTrie",
    "TraceCall",
    "TraceNode",
    "TraceTree",
    "aggregate_stats",
    "build_trace",
    "trace_rollout",
    "tree_stats",
    "with_filter_status",
]
