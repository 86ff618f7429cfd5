"""Build a rollout's prefix tree from its ModelCall records, classify calls, apply the filters.

    tree = build_trace(calls, TraceConfig(), rollout_id="r1", reward=1.0)
    sample = tree.to_sample()            # TreeSample for rl/ (empty when tree.filter_reason is set)

Stages, in order: sort calls by arrival (`index`, then `started_at`); pick the main group; insert
each call into the radix trie (replays insert their output as environment tokens: it was not sampled
for that prompt) and classify main-group calls as main or compacted as they arrive; mark leaves
alive or dead (after `segments.find_segments` attributed each call to the main trajectory, a
compaction or a sub-agent); choose the kept calls (by kind and `TraceConfig`) and keep the nodes on
their paths, at most `max_live_leaves` leaves of them; emit nodes parents-first.

**Over-branching.** The bound keeps a tree's packed size in check (every kept leaf is a path the
trainer forwards and a branch of its attention mask). Over it, the rollout is still trained with its
reward: its calls claim leaves in order, the latest main-thread call first (so the harness's own
trajectory, its whole root path, is always kept), then the other main-thread calls, then the rest,
each in call order; a call ending on a kept path or extending a kept leaf costs none, and each call
that would add a leaf past the bound is dropped alone (`over_branching`, counted in
`stats["over_branching_dropped"]`). It used to drop the rollout whole: code in the sandbox, which can
call the model through the rollout's own session, made 33+ branches to take an honest 0 out of
training. Only a rollout with no kept call at all is dropped whole (`no_trainable_calls`).
"""

from __future__ import annotations

from collections.abc import Sequence

from harnessrl.trace.classify import ThreadTracker, choose_main_group, group_key, initial_kind, mark_leaves
from harnessrl.trace.config import TraceConfig
from harnessrl.trace.segments import find_segments
from harnessrl.trace.stats import tree_stats
from harnessrl.trace.tree import CallKind, DropReason, TraceCall, TraceNode, TraceTree
from harnessrl.trace.trie import PrefixTrie, TrieNode
from harnessrl.types import ModelCall, Rollout, RolloutStatus

_KIND_REASON: dict[CallKind, DropReason] = {
    "subagent": "subagent",
    "compaction_request": "compaction",
    "compacted": "compaction",
    "replay": "replay",
    "empty": "empty_output",
}


def _logprobs(call: ModelCall) -> tuple[Sequence[float], bool]:
    """One log-prob per output id (padded with 0.0 or truncated), and whether that was needed."""
    lps = call.output_logprobs
    n = len(call.output_ids)
    if len(lps) == n:
        return lps, False
    return (list(lps[:n]) + [0.0] * (n - len(lps))), True


def _insert_all(records: list[ModelCall], trie: PrefixTrie, main_key: str) -> list[TraceCall]:
    """Insert every call in order; classify it as it lands (see `classify.ThreadTracker`)."""
    calls: list[TraceCall] = []
    threads = ThreadTracker()
    for i, rec in enumerate(records):
        kind = initial_kind(rec, main_key)
        info = TraceCall(
            call_id=rec.call_id,
            index=rec.index,
            kind=kind,
            group=group_key(rec),
            render=rec.render,
            prompt_len=len(rec.prompt_ids),
            output_len=len(rec.output_ids),
            delivered=not rec.partial and rec.error is None,
        )
        seq = rec.prompt_ids + rec.output_ids
        if seq:
            lps, info.logprob_mismatch = _logprobs(rec)
            path, info.matched = trie.insert(seq, len(rec.prompt_ids), lps, i, model_output=kind != "replay")
            end = path[-1]
            if len(end.ends) > 1:
                info.merged_with = calls[end.ends[0]].call_id
            if kind == "main":
                thread = threads.classify(trie, path, calls, i, rec.render)
                info.kind, info.restart, info.extends, info.forks = thread
            else:
                threads.note(kind)
        calls.append(info)
    return calls


def _keep(trie: PrefixTrie, calls: list[TraceCall], cfg: TraceConfig) -> set[int]:
    """Choose kept calls, at most `max_live_leaves` leaves of them (`_bounded`); return the trie ids
    of the nodes on their paths."""
    kept_kinds: set[str] = {"main"}
    if cfg.keep_compaction:
        kept_kinds |= {"compaction_request", "compacted"}
    if cfg.keep_subagents:
        kept_kinds.add("subagent")
    chosen: list[int] = []
    for i, call in enumerate(calls):
        if call.kind in kept_kinds and not call.dead:
            chosen.append(i)
        else:
            call.reason = "dead_leaf" if call.dead else _KIND_REASON.get(call.kind, "empty_output")
    return _bounded(trie, calls, _priority(calls, chosen), cfg.max_live_leaves)


def _priority(calls: list[TraceCall], chosen: list[int]) -> list[int]:
    """`chosen` in the order they claim a leaf: the latest main-thread call (the harness's own
    trajectory: its whole path comes with it), then the other main-thread calls, then the rest, each
    in call order. The policy's sandbox code can add calls of the main thread's group, but cannot push
    out the harness's latest call (nor, so, the path that led to it)."""
    thread = [i for i in chosen if calls[i].kind in ("main", "compacted")]
    first = thread[-1:] or chosen[-1:]
    on_thread = set(thread)
    rest = [i for i in thread if i not in first] + [
        i for i in chosen if i not in on_thread and i not in first
    ]
    return first + rest


def _bounded(trie: PrefixTrie, calls: list[TraceCall], order: list[int], limit: int) -> set[int]:
    """Keep calls in `order` while the kept nodes have at most `limit` leaves; mark each call that
    would add a leaf past it dropped (`over_branching`). A call ending on a kept path, or extending
    a kept leaf, adds none. Returns the trie ids of the kept nodes."""
    kept: set[int] = set()
    kept_children: dict[int, int] = {}
    leaves = 0
    for i in order:
        call = calls[i]
        fresh: list[TrieNode] = []
        node: TrieNode | None = trie.call_end[i]
        while node is not None and node.nid >= 0 and node.nid not in kept:
            fresh.append(node)
            node = node.parent
        if fresh:  # they hang under `node`: a kept node, or the implicit root (a new root of the forest)
            extends_leaf = node is not None and node.nid >= 0 and kept_children.get(node.nid, 0) == 0
            if not extends_leaf and leaves >= limit:
                call.reason = "over_branching"
                continue
            leaves += 0 if extends_leaf else 1
            for n in fresh:
                kept.add(n.nid)
                if n.parent is not None:
                    kept_children[n.parent.nid] = kept_children.get(n.parent.nid, 0) + 1
        call.kept = True
    return kept


def build_trace(
    records: Sequence[ModelCall],
    config: TraceConfig | None = None,
    *,
    rollout_id: str | None = None,
    group_id: str = "",
    reward: float | None = None,
) -> TraceTree:
    """The full prefix tree of one rollout's calls, classified and filtered (see the module doc)."""
    cfg = config if config is not None else TraceConfig()
    ordered = sorted(records, key=lambda c: (c.index, c.started_at))
    trie = PrefixTrie()
    main_key = choose_main_group(ordered)
    calls = _insert_all(ordered, trie, main_key)
    segments = find_segments(trie, ordered, calls)
    dead = {n.nid for n in mark_leaves(trie, ordered, calls)}
    kept = _keep(trie, calls, cfg)
    filter_reason: DropReason | None = None if kept else "no_trainable_calls"
    tree = _emit(trie, calls, kept, dead)
    tree.rollout_id = rollout_id if rollout_id is not None else (ordered[0].rollout_id if ordered else "")
    tree.group_id = group_id
    tree.reward = reward
    tree.filter_reason = filter_reason
    tree.main_group = main_key
    tree.segments = segments
    tree.stats = tree_stats(tree)
    return tree


def _bools(mask: bytearray) -> list[bool]:
    """`mask` (0/1 bytes) as bools, built run by run (a node is a few runs of environment and output)."""
    out: list[bool] = []
    i, n = 0, len(mask)
    while i < n:
        j = mask.find(1, i)
        if j < 0:
            j = n
        out += [False] * (j - i)
        if j == n:
            break
        i = mask.find(0, j)
        if i < 0:
            i = n
        out += [True] * (i - j)
    return out


def _emit(trie: PrefixTrie, calls: list[TraceCall], kept: set[int], dead: set[int]) -> TraceTree:
    """Re-number the trie parents-first into TraceNodes; fill call end nodes and the leaf lists."""
    order = trie.preorder()
    ids = {n.nid: i for i, n in enumerate(order)}
    nodes: list[TraceNode] = []
    for i, n in enumerate(order):
        creator = calls[n.creator]
        is_kept = n.nid in kept
        reason: DropReason | None = None
        if not is_kept:
            reason = creator.reason or "over_branching"
        parent = -1 if n.parent is None or trie.is_root(n) else ids[n.parent.nid]
        nodes.append(
            TraceNode(
                node_id=i,
                parent=parent,
                start=n.start,
                tokens=n.tokens,
                model_mask=_bools(n.mask),
                logprobs=n.logprobs,
                call_ids=[calls[c].call_id for c in n.ends],
                children=sorted(ids[c.nid] for c in n.children.values()),
                creator=creator.call_id,
                kept=is_kept,
                drop_reason=reason,
            )
        )
    for i, call in enumerate(calls):
        end = trie.call_end.get(i)
        call.end_node = ids[end.nid] if end is not None else -1
    inner = {n.parent for n in nodes if n.kept}
    kept_leaves = [n.node_id for n in nodes if n.kept and n.node_id not in inner]
    return TraceTree(
        rollout_id="",
        group_id="",
        reward=None,
        nodes=nodes,
        calls=calls,
        roots=[n.node_id for n in nodes if n.parent < 0],
        main_group="",
        kept_leaves=kept_leaves,
        dead_leaves=sorted(ids[d] for d in dead),
    )


def trace_rollout(rollout: Rollout, config: TraceConfig | None = None) -> TraceTree:
    """`build_trace` on a Rollout's calls, with its id, group and reward."""
    return build_trace(
        rollout.calls, config, rollout_id=rollout.rollout_id, group_id=rollout.group_id, reward=rollout.reward
    )


def with_filter_status(rollout: Rollout, tree: TraceTree) -> Rollout:
    """The rollout marked filtered:<reason> when its tree dropped it whole; unchanged otherwise.

    Only an `ok` rollout is re-labelled: a timeout or error keeps the status that explains it.
    """
    if tree.filter_reason is None or rollout.status is not RolloutStatus.OK:
        return rollout
    return rollout.model_copy(update={"status": RolloutStatus.FILTERED, "status_reason": tree.filter_reason})
