"""A traced rollout packs with rl/'s tree layout: each unique kept token once, paths equal the calls."""

from __future__ import annotations

from harnessrl.config import TraceConfig
from harnessrl.rl.packing import layout_tree
from harnessrl.trace import build_trace, with_filter_status
from harnessrl.types import ModelCall, Rollout, RolloutStatus


def mc(i: int, prompt: list[int], output: list[int], system: str = "main") -> ModelCall:
    return ModelCall(
        call_id=f"c{i}", rollout_id="r", index=i, dialect="x", prompt_ids=prompt, output_ids=output,
        output_logprobs=[-(i + 1) / 8] * len(output), system_digest=system,
    )  # fmt: skip


CALLS = [
    mc(0, [1, 2, 3, 10], [11]),
    mc(1, [1, 2, 8, 20], [21], system="explore"),
    mc(2, [1, 2, 3, 10], [12, 13]),  # a retry: c0 is dead
    mc(3, [1, 2, 3, 10, 12, 13, 14], [15]),
    mc(4, [1, 2, 8, 20, 21, 22], [23], system="explore"),
]


def test_trace_sample_packs_with_rl_layout() -> None:
    tree = build_trace(CALLS, TraceConfig(keep_subagents=True), reward=1.0)
    sample = tree.to_sample()
    layout = layout_tree(sample)
    assert layout.num_tokens == tree.stats["tokens_unique"] == 13
    assert layout.input_ids.tolist() == [1, 2, 3, 10, 12, 13, 14, 15, 8, 20, 21, 22, 23]
    # one path per kept leaf, equal to that leaf call's sequence
    paths = [layout.input_ids[p].tolist() for p in layout.path_tokens]
    assert paths == [[1, 2, 3, 10, 12, 13, 14, 15], [1, 2, 8, 20, 21, 22, 23]]
    trained = [tok for tok, m in zip(layout.input_ids.tolist(), layout.loss_mask.tolist(), strict=True) if m]
    assert trained == [12, 13, 15, 21, 23]
    assert layout.rollout_logprobs[layout.loss_mask].tolist() == [-0.375, -0.375, -0.5, -0.25, -0.625]


def test_over_branched_rollout_packs_its_bounded_tree_and_stays_ok() -> None:
    # One leaf allowed: the main thread's latest call (c3) keeps it, the sub-agent's branch is dropped;
    # the rollout is not filtered (an over-branched rollout is trained, never dropped whole).
    rollout = Rollout(rollout_id="r", task_id="t", harness="h", calls=CALLS)
    tree = build_trace(CALLS, TraceConfig(keep_subagents=True, max_live_leaves=1), reward=0.0)
    assert with_filter_status(rollout, tree) is rollout
    assert [(c.call_id, c.kept, c.reason) for c in tree.calls] == [
        ("c0", False, "dead_leaf"),
        ("c1", False, "over_branching"),
        ("c2", True, None),
        ("c3", True, None),
        ("c4", False, "over_branching"),
    ]
    layout = layout_tree(tree.to_sample())
    assert layout.input_ids.tolist() == [1, 2, 3, 10, 12, 13, 14, 15]
    assert layout.num_tokens == tree.stats["tokens_unique"] == 8


def test_a_rollout_with_nothing_to_train_is_marked_filtered() -> None:
    empty = [mc(0, [1, 2, 3], [])]
    rollout = Rollout(rollout_id="r", task_id="t", harness="h", calls=empty)
    tree = build_trace(empty)
    marked = with_filter_status(rollout, tree)
    assert (marked.status_label, rollout.status_label) == ("filtered:no_trainable_calls", "ok")
    timeout = rollout.model_copy(update={"status": RolloutStatus.TIMEOUT})
    assert with_filter_status(timeout, tree).status_label == "timeout"
    assert with_filter_status(rollout, build_trace(CALLS)) is rollout
