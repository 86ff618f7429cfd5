"""Prefix-tree reconstruction on constructed call sets: exact trees, kinds, filters and statistics.

Token ids are small integers; 1, 2 stand for a chat template's opening tokens, 3 for the main system
prompt, 8/9 for sub-agent system prompts. `_shape` writes a tree as (parent, tokens, mask, kept,
drop reason, calls ending there) per node, mask as a string of e (environment) and m (model).
"""

from __future__ import annotations

from typing import Any

from harnessrl.config import TraceConfig
from harnessrl.trace import aggregate_stats, build_trace, trace_rollout, with_filter_status
from harnessrl.trace.tree import TraceTree
from harnessrl.trace.trie import PrefixTrie, _common_prefix
from harnessrl.types import ModelCall, Rollout


def mc(i: int, prompt: list[int], output: list[int], **kw: Any) -> ModelCall:
    """Call i with log-probs -(i + 1) / 10 - k / 100 for its k-th output token."""
    lps = [-(i + 1) / 10 - k / 100 for k in range(len(output))]
    return ModelCall(
        call_id=f"c{i}", rollout_id="r", index=i, dialect="anthropic", prompt_ids=prompt,
        output_ids=output, output_logprobs=lps, system_digest=kw.pop("system", "main"), **kw,
    )  # fmt: skip


def _shape(tree: TraceTree) -> list[tuple[int, list[int], str, bool, str | None, list[str]]]:
    return [
        (
            n.parent,
            n.tokens,
            "".join("m" if m else "e" for m in n.model_mask),
            n.kept,
            n.drop_reason,
            n.call_ids,
        )
        for n in tree.nodes
    ]


def _kinds(tree: TraceTree) -> list[tuple[str, str, bool, str | None]]:
    return [(c.call_id, c.kind, c.kept, c.reason) for c in tree.calls]


def test_common_prefix_matches_a_plain_loop() -> None:
    a = list(range(1000))
    for cut in (0, 1, 7, 8, 31, 32, 33, 100, 511, 999):
        b = [*a[:cut], -1, *a[cut + 1 :]]
        assert _common_prefix(a, 0, b, 1000) == cut
    assert _common_prefix(a, 0, a, 1000) == 1000
    assert _common_prefix([9, *a], 1, a, 500) == 500


def test_linear_chain() -> None:
    calls = [
        mc(0, [1, 2, 3, 10], [11, 12]),
        mc(1, [1, 2, 3, 10, 11, 12, 13], [14]),
        mc(2, [1, 2, 3, 10, 11, 12, 13, 14, 15], [16, 17]),
    ]
    tree = build_trace(calls, reward=1.0)
    assert _shape(tree) == [
        (-1, [1, 2, 3, 10, 11, 12], "eeeemm", True, None, ["c0"]),
        (0, [13, 14], "em", True, None, ["c1"]),
        (1, [15, 16, 17], "emm", True, None, ["c2"]),
    ]
    assert tree.nodes[1].logprobs == [0.0, -0.2]
    assert tree.nodes[2].logprobs == [0.0, -0.3, -0.31]
    assert [c.matched for c in tree.calls] == [0, 6, 8]
    sample = tree.to_sample()
    assert sample.reward == 1.0
    assert sample.paths == [[0, 1, 2]]
    assert [(n.node_id, n.parent, n.call_ids) for n in sample.nodes] == [
        (0, -1, ["c0"]),
        (1, 0, ["c1"]),
        (2, 1, ["c2"]),
    ]
    s = tree.stats
    assert (s["tokens_per_call"], s["tokens_paths"], s["tokens_unique"]) == (6 + 8 + 11, 11, 11)
    assert (s["live_leaves"], s["dead_leaves"], s["depth_nodes"], s["branch_points"]) == (1, 0, 3, 0)
    assert s["model_tokens_kept"] == 5
    assert s["ratio_per_call_to_unique"] == 25 / 11


def test_retry_leaves_a_dead_leaf() -> None:
    calls = [mc(0, [1, 2, 3], [4, 5]), mc(1, [1, 2, 3], [6, 7]), mc(2, [1, 2, 3, 6, 7, 8], [9])]
    tree = build_trace(calls)
    assert _shape(tree) == [
        (-1, [1, 2, 3], "eee", True, None, []),
        (0, [4, 5], "mm", False, "dead_leaf", ["c0"]),
        (0, [6, 7], "mm", True, None, ["c1"]),
        (2, [8, 9], "em", True, None, ["c2"]),
    ]
    assert _kinds(tree) == [
        ("c0", "main", False, "dead_leaf"),
        ("c1", "main", True, None),
        ("c2", "main", True, None),
    ]
    assert tree.dead_leaves == [1]
    assert tree.kept_leaves == [3]
    assert tree.to_sample().paths == [[0, 1, 2]]
    assert (tree.stats["tokens_per_call"], tree.stats["tokens_paths"], tree.stats["tokens_unique"]) == (
        17,
        7,
        7,
    )
    assert tree.stats["tokens_unique_all"] == 9


def test_regeneration_after_a_format_error() -> None:
    # c0 produced a malformed tool call; the harness dropped it, appended a nudge (70) and asked again.
    calls = [mc(0, [1, 2, 3], [4, 5]), mc(1, [1, 2, 3, 70], [6, 7]), mc(2, [1, 2, 3, 70, 6, 7, 8], [9])]
    tree = build_trace(calls)
    assert _shape(tree) == [
        (-1, [1, 2, 3], "eee", True, None, []),
        (0, [4, 5], "mm", False, "dead_leaf", ["c0"]),
        (0, [70, 6, 7], "emm", True, None, ["c1"]),
        (2, [8, 9], "em", True, None, ["c2"]),
    ]
    assert tree.stats["dead_leaves"] == 1


def test_two_subagents_interleaved_with_the_main_thread() -> None:
    calls = [
        mc(0, [1, 2, 3, 10], [11]),
        mc(1, [1, 2, 8, 20], [21], system="explore"),
        mc(2, [1, 2, 3, 10, 11, 12], [13]),
        mc(3, [1, 2, 9, 30], [31], system="plan"),
        mc(4, [1, 2, 8, 20, 21, 22], [23], system="explore"),
        mc(5, [1, 2, 3, 10, 11, 12, 13, 14], [15]),
        mc(6, [1, 2, 9, 30, 31, 32], [33], system="plan"),
        mc(7, [1, 2, 3, 10, 11, 12, 13, 14, 15, 16], [17]),
    ]
    tree = build_trace(calls)
    assert tree.main_group == "main||"
    assert _shape(tree) == [
        (-1, [1, 2], "ee", True, None, []),
        (0, [3, 10, 11], "eem", True, None, ["c0"]),
        (1, [12, 13], "em", True, None, ["c2"]),
        (2, [14, 15], "em", True, None, ["c5"]),
        (3, [16, 17], "em", True, None, ["c7"]),
        (0, [8, 20, 21], "eem", False, "subagent", ["c1"]),
        (5, [22, 23], "em", False, "subagent", ["c4"]),
        (0, [9, 30, 31], "eem", False, "subagent", ["c3"]),
        (7, [32, 33], "em", False, "subagent", ["c6"]),
    ]
    assert [c.kind for c in tree.calls] == [
        "main",
        "subagent",
        "main",
        "subagent",
        "subagent",
        "main",
        "subagent",
        "main",
    ]
    assert tree.stats["dead_leaves"] == 0
    assert tree.to_sample().paths == [[0, 1, 2, 3, 4]]
    kept = build_trace(calls, TraceConfig(keep_subagents=True))
    assert kept.to_sample().paths == [[0, 1, 2, 3, 4], [0, 5, 6], [0, 7, 8]]
    assert kept.stats["tokens_unique"] == 21


def _compaction_calls(tag: bool) -> list[ModelCall]:
    tags = ["compaction_request"] if tag else []
    return [
        mc(0, [1, 2, 3, 10], [11]),
        mc(1, [1, 2, 3, 10, 11, 12], [13]),
        mc(2, [1, 2, 3, 10, 11, 12, 13, 90], [91, 92], tags=tags),  # "summarize the conversation"
        mc(3, [1, 2, 3, 95, 91, 92, 96], [17]),  # restart from the summary
        mc(4, [1, 2, 3, 95, 91, 92, 96, 17, 18], [19]),
    ]


def test_compaction_mid_rollout() -> None:
    tree = build_trace(_compaction_calls(tag=True))
    assert _kinds(tree) == [
        ("c0", "main", True, None),
        ("c1", "main", True, None),
        ("c2", "compaction_request", False, "compaction"),
        ("c3", "compacted", False, "compaction"),
        ("c4", "compacted", False, "compaction"),
    ]
    assert [c.restart for c in tree.calls] == [False, False, False, True, False]
    assert _shape(tree) == [
        (-1, [1, 2, 3], "eee", True, None, []),
        (0, [10, 11], "em", True, None, ["c0"]),
        (1, [12, 13], "em", True, None, ["c1"]),
        (2, [90, 91, 92], "emm", False, "compaction", ["c2"]),
        (0, [95, 91, 92, 96, 17], "eeeem", False, "compaction", ["c3"]),
        (4, [18, 19], "em", False, "compaction", ["c4"]),
    ]
    assert tree.to_sample().paths == [[0, 1, 2]]
    kept = build_trace(_compaction_calls(tag=True), TraceConfig(keep_compaction=True))
    assert kept.to_sample().paths == [[0, 1, 2, 3], [0, 4, 5]]
    assert kept.stats["live_leaves"] == 2


def test_untagged_summary_request_ends_the_first_segment() -> None:
    # Without the tag the summary request is an ordinary main call; the restart after it makes it the
    # final answer of the first segment, so it is trained with the main thread.
    tree = build_trace(_compaction_calls(tag=False))
    assert _kinds(tree) == [
        ("c0", "main", True, None),
        ("c1", "main", True, None),
        ("c2", "main", True, None),
        ("c3", "compacted", False, "compaction"),
        ("c4", "compacted", False, "compaction"),
    ]
    assert tree.kept_leaves == [3]
    assert tree.to_sample().paths == [[0, 1, 2, 3]]


def test_retokenized_call_is_a_live_branch_not_a_compaction() -> None:
    calls = [
        mc(0, [1, 2, 3], [4, 5]),
        mc(1, [1, 2, 3, 40, 41, 6], [7], render="retokenized"),  # 4, 5 re-rendered as 40, 41
        mc(2, [1, 2, 3, 40, 41, 6, 7, 8], [9], render="spliced"),
    ]
    tree = build_trace(calls)
    assert _kinds(tree) == [
        ("c0", "main", True, None),
        ("c1", "main", True, None),
        ("c2", "main", True, None),
    ]
    assert tree.to_sample().paths == [[0, 1], [0, 2, 3]]
    assert tree.stats["retokenized"] == 1


def _moving_tail() -> list[ModelCall]:
    # OpenClaw: an environment message (50) is moved to the end of every prompt.
    return [
        mc(0, [1, 2, 3, 50], [11, 12]),
        mc(1, [1, 2, 3, 11, 12, 13, 50], [14, 15]),
        mc(2, [1, 2, 3, 11, 12, 13, 14, 15, 16, 50], [17, 18]),
    ]


def test_moving_tail_branches_and_every_branch_lives() -> None:
    tree = build_trace(_moving_tail())
    assert _shape(tree) == [
        (-1, [1, 2, 3], "eee", True, None, []),
        (0, [50, 11, 12], "emm", True, None, ["c0"]),
        (0, [11, 12, 13], "eee", True, None, []),
        (2, [50, 14, 15], "emm", True, None, ["c1"]),
        (2, [14, 15, 16, 50, 17, 18], "eeeemm", True, None, ["c2"]),
    ]
    assert tree.stats["live_leaves"] == 3
    assert tree.stats["branch_points"] == 2


def test_over_branching_drops_the_extra_branch_not_the_rollout() -> None:
    # Three live leaves, two allowed: the latest call (c2) claims its leaf first, then c0 in call
    # order; c1 would be a third leaf and is the one dropped.
    tree = build_trace(_moving_tail(), TraceConfig(max_live_leaves=2), reward=0.0)
    assert tree.filter_reason is None
    assert _shape(tree) == [
        (-1, [1, 2, 3], "eee", True, None, []),
        (0, [50, 11, 12], "emm", True, None, ["c0"]),
        (0, [11, 12, 13], "eee", True, None, []),
        (2, [50, 14, 15], "emm", False, "over_branching", ["c1"]),
        (2, [14, 15, 16, 50, 17, 18], "eeeemm", True, None, ["c2"]),
    ]
    assert _kinds(tree) == [
        ("c0", "main", True, None),
        ("c1", "main", False, "over_branching"),
        ("c2", "main", True, None),
    ]
    sample = tree.to_sample()
    assert (sample.paths, sample.reward) == ([[0, 1], [0, 2, 3]], 0.0)
    s = tree.stats
    assert (s["live_leaves"], s["over_branching_dropped"], s["filter_reason"]) == (2, 1, None)
    assert (s["tokens_paths"], s["tokens_unique"], s["tokens_unique_all"]) == (6 + 12, 15, 18)
    one = build_trace(_moving_tail(), TraceConfig(max_live_leaves=1))
    assert [(c.call_id, c.kept) for c in one.calls] == [("c0", False), ("c1", False), ("c2", True)]
    assert (one.kept_leaves, one.stats["over_branching_dropped"]) == ([4], 2)


def _forks_off_the_latest_call(branches: int) -> list[ModelCall]:
    """The harness's first call (c0), then `branches` calls from sandbox code with its system prompt
    and tools, each forking off c0's answer and carrying the previous branch's output (so every one
    is a live leaf), then the harness's next call, which carries the last branch's output."""
    calls = [mc(0, [1, 2, 3, 10], [11])]
    for k in range(branches):
        carried = [1000 + k - 1] if k else []
        calls.append(mc(k + 1, [1, 2, 3, 10, 11, 500 + k, *carried], [1000 + k]))
    calls.append(mc(branches + 1, [1, 2, 3, 10, 11, 12, 1000 + branches - 1], [13]))
    return calls


def test_an_over_branched_rollout_is_trained_with_its_reward_on_bounded_leaves() -> None:
    # The red-team escape: 40 live branches made the rollout `filtered:over_branching`, so its 0 was
    # never trained. Now it keeps its reward on max_live_leaves leaves, the harness's latest call
    # (and with it c0, on its path) among them, and the 9 extra branches are reported dropped.
    calls = _forks_off_the_latest_call(40)
    rollout = Rollout(rollout_id="v", task_id="t", harness="h", group_id="g", reward=0.0, calls=calls)
    tree = trace_rollout(rollout)
    assert with_filter_status(rollout, tree) is rollout
    assert tree.filter_reason is None and tree.stats["filter_reason"] is None
    assert [c.dead for c in tree.calls] == [False] * 42
    kept = [c.call_id for c in tree.calls if c.kept]
    assert kept == ["c0", *(f"c{k}" for k in range(1, 32)), "c41"]
    assert [(c.call_id, c.reason) for c in tree.calls if not c.kept] == [
        (f"c{k}", "over_branching") for k in range(32, 41)
    ]
    latest = tree.calls[-1].end_node
    assert latest in tree.kept_leaves and len(tree.kept_leaves) == TraceConfig().max_live_leaves == 32
    assert (tree.stats["live_leaves"], tree.stats["over_branching_dropped"]) == (32, 9)
    sample = tree.to_sample()
    assert (sample.rollout_id, sample.reward, len(sample.paths)) == ("v", 0.0, 32)
    assert [sample.nodes[n].tokens for n in sample.paths[-1]] == [[1, 2, 3, 10, 11], [12, 1039, 13]]
    assert aggregate_stats([tree.stats])["filtered"] == {}


def test_identical_duplicate_calls_merge() -> None:
    calls = [
        mc(0, [1, 2, 3], [4, 5]),
        mc(1, [1, 2, 3], [4, 5]),
        mc(2, [1, 2, 3, 4, 5, 6], [7]),
        mc(3, [1, 2, 3, 4, 5, 6], [7]),
    ]
    tree = build_trace(calls)
    assert _shape(tree) == [
        (-1, [1, 2, 3, 4, 5], "eeemm", True, None, ["c0", "c1"]),
        (0, [6, 7], "em", True, None, ["c2", "c3"]),
    ]
    assert tree.nodes[0].logprobs == [0.0, 0.0, 0.0, -0.1, -0.11]  # the first sampler's log-probs
    assert [c.merged_with for c in tree.calls] == [None, "c0", None, "c2"]
    assert tree.stats["merged_duplicates"] == 2
    assert tree.stats["dead_leaves"] == 0


def test_replay_is_merged_and_never_trained() -> None:
    calls = [mc(0, [1, 2, 3], [4, 5]), mc(1, [1, 2, 3, 9], [4, 5], replay_of="c0")]
    tree = build_trace(calls)
    assert _shape(tree) == [
        (-1, [1, 2, 3], "eee", True, None, []),
        (0, [4, 5], "mm", True, None, ["c0"]),
        (0, [9, 4, 5], "eee", False, "replay", ["c1"]),
    ]


def test_call_sharing_no_prefix_is_a_second_root() -> None:
    main_restart = build_trace([mc(0, [1, 2, 3], [4]), mc(1, [7, 8, 9], [10])])
    assert main_restart.roots == [0, 1]
    assert _kinds(main_restart) == [("c0", "main", True, None), ("c1", "compacted", False, "compaction")]
    sub = build_trace(
        [mc(0, [1, 2, 3], [4]), mc(1, [7, 8, 9], [10], system="other"), mc(2, [1, 2, 3, 4, 5], [6])]
    )
    assert _shape(sub) == [
        (-1, [1, 2, 3, 4], "eeem", True, None, ["c0"]),
        (0, [5, 6], "em", True, None, ["c2"]),
        (-1, [7, 8, 9, 10], "eeem", False, "subagent", ["c1"]),
    ]


def test_call_ending_inside_a_node_splits_it() -> None:
    trie = PrefixTrie()
    trie.insert([1, 2, 3, 4, 5], 3, [-0.5, -0.6], 0, model_output=True)
    path, matched = trie.insert([1, 2, 3, 4], 2, [-0.7, -0.8], 1, model_output=True)
    assert matched == 4
    assert [(n.tokens, bytes(n.mask), n.logprobs, n.ends) for n in trie.preorder()] == [
        ([1, 2, 3, 4], b"\x00\x00\x01\x01", [0.0, 0.0, -0.7, -0.5], [1]),
        ([5], b"\x01", [-0.6], [0]),
    ]
    assert [n.tokens for n in path] == [[1, 2, 3, 4]]


def test_empty_output_and_logprob_mismatch_are_recorded() -> None:
    bad = ModelCall(
        call_id="c1", rollout_id="r", index=1, dialect="x", prompt_ids=[1, 2, 3, 4, 5], output_ids=[6, 7],
        output_logprobs=[-1.0], system_digest="main",
    )  # fmt: skip
    tree = build_trace([mc(0, [1, 2, 3], [4]), mc(2, [1, 2, 3, 4, 5, 6, 7, 8], []), bad])
    assert [(c.call_id, c.kind, c.logprob_mismatch) for c in tree.calls] == [
        ("c0", "main", False),
        ("c1", "main", True),
        ("c2", "empty", False),
    ]
    assert tree.nodes[1].logprobs == [0.0, -1.0, 0.0]
    assert tree.stats["logprob_mismatch"] == 1
    assert tree.to_sample().paths == [[0, 1]]


def test_no_trainable_calls_filters() -> None:
    tree = build_trace([mc(0, [1, 2], [])])
    assert tree.filter_reason == "no_trainable_calls"
    assert build_trace([]).filter_reason == "no_trainable_calls"


def test_trace_rollout_and_aggregate_stats() -> None:
    r1 = Rollout(rollout_id="a", task_id="t", harness="h", group_id="g", reward=0.5, calls=_moving_tail())
    r2 = Rollout(
        rollout_id="b", task_id="t", harness="h", calls=[mc(0, [1, 2, 3], [4]), mc(1, [1, 2, 3], [5])]
    )
    t1 = trace_rollout(r1)
    t2 = trace_rollout(r2, TraceConfig(max_live_leaves=1))
    assert (t1.rollout_id, t1.group_id, t1.to_sample().reward) == ("a", "g", 0.5)
    agg = aggregate_stats([t1.stats, t2.stats])
    assert agg["rollouts"] == 2
    assert agg["calls"] == 5
    assert agg["dead_leaves"] == 1
    assert agg["filtered"] == {}
    assert agg["tokens_per_call"] == 6 + 9 + 12 + 4 + 4
    assert agg["tokens_unique"] == 18 + 4
    assert agg["ratio_per_call_to_unique"] == 35 / 22
    t3 = build_trace(_moving_tail(), TraceConfig(max_live_leaves=1))
    with_t3 = aggregate_stats([t1.stats, t3.stats])
    assert (with_t3["filtered"], with_t3["over_branching_dropped"], with_t3["live_leaves"]) == ({}, 2, 4)
    assert agg["segments_by_kind"] == {"main": 2} and agg["rollouts_with_segment"] == {"main": 2}


def test_undelivered_output_is_not_the_final_answer() -> None:
    # The harness disconnected during c1 (partial) and c2 failed: neither output reached it.
    calls = [
        mc(0, [1, 2, 3], [4]),
        mc(1, [1, 2, 3, 4, 5], [6], partial=True),
        mc(2, [1, 2, 3, 4, 5], [7], error="engine failed"),
    ]
    tree = build_trace(calls)
    assert _kinds(tree) == [
        ("c0", "main", True, None),
        ("c1", "main", False, "dead_leaf"),
        ("c2", "main", False, "dead_leaf"),
    ]
    assert tree.to_sample().paths == [[0]]


def test_two_instances_of_one_subagent_type_and_a_subagent_retry() -> None:
    calls = [
        mc(0, [1, 2, 3, 10], [11]),
        mc(1, [1, 2, 8, 20], [21], system="explore"),  # instance A
        mc(2, [1, 2, 8, 30], [31], system="explore"),  # instance B
        mc(3, [1, 2, 8, 20, 21, 22], [23], system="explore"),  # A's final answer
        mc(4, [1, 2, 8, 30, 31, 32], [33], system="explore"),  # B: retried next
        mc(5, [1, 2, 8, 30, 31, 32], [34], system="explore"),  # B's final answer
        mc(6, [1, 2, 3, 10, 11, 12], [13]),
    ]
    tree = build_trace(calls, TraceConfig(keep_subagents=True))
    assert [(c.call_id, c.dead) for c in tree.calls if c.leaf] == [
        ("c3", False),
        ("c4", True),
        ("c5", False),
        ("c6", False),
    ]
    assert tree.to_sample().paths == [[0, 1, 2], [0, 3, 4, 5], [0, 3, 6, 7, 8]]  # sample ids: node 8 dropped


def test_main_thread_is_the_widest_group_not_the_busiest() -> None:
    calls = [
        mc(0, [1, 2, 3, 10], [11]),
        *(mc(i, [1, 2, 8, 20 + i], [21], system="explore") for i in range(1, 6)),
        mc(6, [1, 2, 3, 10, 11, 12], [13]),
    ]
    tree = build_trace(calls)
    assert tree.main_group == "main||"
    assert [c.kind for c in tree.calls] == ["main"] + ["subagent"] * 5 + ["main"]
