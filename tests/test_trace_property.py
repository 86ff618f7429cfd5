"""Property tests: random call sets (tiny token alphabet, so prefixes collide often) against invariants.

Calls are generated as a harness would make them: extend an earlier call, branch from a prefix of one,
or start fresh, with random environment tokens and outputs; some are sub-agents, summary requests,
replays, retokenized or empty.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from harnessrl.config import TraceConfig
from harnessrl.trace import build_trace
from harnessrl.trace.tree import TraceTree
from harnessrl.types import ModelCall

TOKENS = st.integers(min_value=0, max_value=4)


@st.composite
def call_sets(draw: st.DrawFn) -> list[ModelCall]:
    n = draw(st.integers(min_value=1, max_value=12))
    seqs: list[list[int]] = []
    calls: list[ModelCall] = []
    for i in range(n):
        how = draw(st.sampled_from(["extend", "branch", "fresh"])) if seqs else "fresh"
        base: list[int] = []
        if how != "fresh":
            prev = seqs[draw(st.integers(0, len(seqs) - 1))]
            base = prev if how == "extend" else prev[: draw(st.integers(0, len(prev)))]
        prompt = base + draw(st.lists(TOKENS, min_size=0 if base else 1, max_size=4))
        output = draw(st.lists(TOKENS, min_size=0, max_size=4))
        flavour = draw(
            st.sampled_from(["main", "main", "main", "sub", "summary", "replay", "retok", "partial"])
        )
        calls.append(
            ModelCall(
                call_id=f"c{i}",
                rollout_id="r",
                index=i,
                dialect="x",
                prompt_ids=prompt,
                output_ids=output,
                output_logprobs=[-(i + 1) - k / 10 for k in range(len(output))],
                system_digest="sub" if flavour == "sub" else "main",
                tags=["compaction_request"] if flavour == "summary" else [],
                replay_of="c0" if flavour == "replay" and i else None,
                render="retokenized" if flavour == "retok" else "spliced",
                partial=flavour == "partial",
            )
        )
        seqs.append(prompt + output)
    return calls


def _check_structure(tree: TraceTree) -> None:
    first_tokens: dict[int, set[int]] = {}
    for n in tree.nodes:
        assert n.tokens, "no empty nodes"
        assert n.parent < n.node_id, "parents before children"
        assert len(n.tokens) == len(n.model_mask) == len(n.logprobs)
        siblings = first_tokens.setdefault(n.parent, set())
        assert n.tokens[0] not in siblings, "siblings start with distinct tokens"
        siblings.add(n.tokens[0])
        if n.parent >= 0:
            parent = tree.nodes[n.parent]
            assert n.start == parent.start + len(parent.tokens)
            assert n.node_id in parent.children


def _first_sampler(calls: list[ModelCall], seq: list[int], pos: int) -> float | None:
    """Log-prob of the earliest non-replay call whose output covers tree position (seq[:pos+1])."""
    for c in calls:
        full = c.prompt_ids + c.output_ids
        if c.replay_of is None and len(c.prompt_ids) <= pos < len(full) and full[: pos + 1] == seq[: pos + 1]:
            return c.output_logprobs[pos - len(c.prompt_ids)]
    return None


@settings(max_examples=300, deadline=None)
@given(call_sets(), st.booleans(), st.booleans(), st.integers(1, 4))
def test_tree_invariants(
    calls: list[ModelCall], keep_compaction: bool, keep_subagents: bool, max_live: int
) -> None:
    cfg = TraceConfig(
        keep_compaction=keep_compaction, keep_subagents=keep_subagents, max_live_leaves=max_live
    )
    tree = build_trace(calls, cfg)
    _check_structure(tree)
    by_id = {c.call_id: c for c in calls}
    kept_positions: set[tuple[int, int]] = set()
    for info in tree.calls:
        rec = by_id[info.call_id]
        seq = rec.prompt_ids + rec.output_ids
        # Every call's sequence is exactly a root-to-node path.
        assert tree.call_tokens(info.end_node) == seq
        if not info.kept:
            continue
        # Every model token of a kept call sits once in the kept tree, marked model, with the log-prob
        # of the first call that sampled it there.
        path = tree.path_to(info.end_node)
        assert all(tree.nodes[n].kept for n in path)
        for pos in range(len(rec.prompt_ids), len(seq)):
            node = next(
                tree.nodes[n]
                for n in path
                if tree.nodes[n].start <= pos < tree.nodes[n].start + len(tree.nodes[n].tokens)
            )
            offset = pos - node.start
            assert node.model_mask[offset]
            assert node.logprobs[offset] == _first_sampler(calls, seq, pos)
            kept_positions.add((node.node_id, offset))
    sample = tree.to_sample()
    assert len({n.node_id for n in sample.nodes}) == len(sample.nodes) == tree.stats["kept_nodes"]
    assert sum(sum(n.model_mask) for n in sample.nodes) >= len(kept_positions)
    on_paths = {n for p in sample.paths for n in p}
    assert on_paths == set(range(len(sample.nodes)))
    s = tree.stats
    assert s["tokens_unique"] <= s["tokens_paths"] <= s["tokens_per_call"]
    assert s["tokens_unique"] <= s["tokens_unique_all"]
    assert s["tokens_unique"] == sum(len(n.tokens) for n in sample.nodes)
    assert s["tokens_paths"] == sum(len(sample.nodes[n].tokens) for p in sample.paths for n in p)
    assert s["live_leaves"] == len(sample.paths)

    # Filters: dead calls are unconsumed leaves; the kept leaves are kept calls' ends; the bound holds,
    # and a rollout is dropped whole only when nothing is kept (over-branching drops calls, never it).
    kinds = {"main"} | ({"compaction_request", "compacted"} if keep_compaction else set())
    kinds |= {"subagent"} if keep_subagents else set()
    eligible = [c for c in tree.calls if c.kind in kinds and not c.dead]
    for info in tree.calls:
        if info.dead:
            assert info.leaf and not info.kept and info.reason == "dead_leaf"
            assert not tree.nodes[info.end_node].kept
        if info.kept:
            assert info.output_len > 0 and info.kind != "replay" and not info.dead
    for info in eligible:
        assert info.kept or info.reason == "over_branching"
        if info.reason == "over_branching":  # it would have added a leaf past a full bound
            assert not tree.nodes[info.end_node].kept and len(tree.kept_leaves) == max_live
    thread = [c for c in eligible if c.kind in ("main", "compacted")]
    if thread:
        assert thread[-1].kept, "the latest main-thread call is always kept"
    assert s["over_branching_dropped"] == sum(1 for c in tree.calls if c.reason == "over_branching")
    ends_of_kept = {c.end_node for c in tree.calls if c.kept}
    assert set(tree.kept_leaves) <= ends_of_kept
    if eligible:
        assert tree.filter_reason is None and 1 <= len(tree.kept_leaves) <= max_live
    else:
        assert not any(n.kept for n in tree.nodes) and sample.paths == []
        assert tree.filter_reason == "no_trainable_calls"
