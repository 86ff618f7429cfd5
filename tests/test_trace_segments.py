"""Segments: every call attributed to the main trajectory, a compaction or a sub-agent, with its links.

Constructed call sets (small integer ids, as in test_trace.py) pin the rules; captured traffic of the
real CLIs (Claude Code's Agent tool and its compaction, Codex's and OpenClaw's compactions; replayed
through a live proxy, `traffic_replay.py`) and a white-box rollout recorded by the proxy
(`scripts/capture_whitebox_traffic 00020 ... subagents=true compact_tokens=500`) show the detection
works from recorded traffic alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from batch_golden import _compaction, _subagents, call
from traffic_replay import replay

from harnessrl.config import TraceConfig
from harnessrl.formats.calls import read_calls
from harnessrl.rollout.prompt_check import first_prompt
from harnessrl.trace import build_trace
from harnessrl.trace.segments import carries
from harnessrl.trace.tree import TraceTree
from harnessrl.trace.views import render_html, render_text
from harnessrl.types import ModelCall, Rollout, SegmentInfo, ToolCall

FIXTURES = Path(__file__).parent / "fixtures"


def _segments(tree: TraceTree) -> list[tuple[str, list[int], int, int | None, str | None, int | None, bool]]:
    """(kind, call indices, parent, origin call index, tool call, answer call index, used) per segment."""
    index = {c.call_id: c.index for c in tree.calls}

    def at(call_id: str | None) -> int | None:
        return None if call_id is None else index[call_id]

    return [
        (
            s.kind,
            [index[c] for c in s.calls],
            s.parent,
            at(s.origin_call),
            s.tool_call,
            at(s.answer_call),
            s.used,
        )
        for s in tree.segments
    ]


def test_compaction_links_the_summary_to_the_step_it_replaced_and_the_steps_on_it() -> None:
    tree = build_trace(_compaction("b"))
    assert _segments(tree) == [
        ("main", [0, 1], -1, None, None, None, True),
        ("compaction", [2], 0, 1, None, 3, True),  # summarises c1's context, c3 runs on it
        ("main", [3, 4], 1, None, None, None, True),
    ]
    assert [c.segment for c in tree.calls] == [0, 0, 1, 2, 2]
    kept = build_trace(_compaction("b"), TraceConfig(keep_compaction=True)).to_sample()
    assert [n.segment for n in kept.nodes] == [0, 0, 0, 1, 2, 2]
    assert kept.segments == [
        SegmentInfo(kind="main"),
        SegmentInfo(kind="compaction", parent=0, origin_call="b-c1", answer_call="b-c3", used=True),
        SegmentInfo(kind="main", parent=1),
    ]


def _spawning(calls: list[ModelCall], i: int, *names: str) -> None:
    calls[i].tool_calls = [ToolCall(id=f"t{i}{k}", name=n) for k, n in enumerate(names)]


def test_interleaved_subagents_split_into_instances_linked_to_their_tool_calls() -> None:
    calls = _subagents("c")  # explore: c1, c4; plan: c3, c6; main: c0 c2 c5 c7
    _spawning(calls, 0, "Agent")
    _spawning(calls, 2, "Agent")
    calls[5].prompt_ids = [*calls[5].prompt_ids[:-1], 22, 23, 14]  # explore's answer (22 23) came back
    tree = build_trace(calls)
    assert _segments(tree) == [
        ("main", [0, 2, 5, 7], -1, None, None, None, True),
        ("subagent", [1, 4], 0, 0, "t00", 5, True),
        ("subagent", [3, 6], 0, 2, "t20", 7, False),  # its answer (33) never reached the main thread
    ]


def test_parallel_instances_of_one_type_take_the_tool_calls_in_order() -> None:
    calls = [
        call("p", 0, [1, 2, 3, 10], [11]),
        call("p", 1, [1, 2, 8, 20], [21], system="explore"),  # instance A
        call("p", 2, [1, 2, 8, 30], [31], system="explore"),  # instance B
        call("p", 3, [1, 2, 8, 20, 21, 22], [23, 24, 25], system="explore"),  # A answers
        call("p", 4, [1, 2, 8, 30, 31, 32], [33, 34, 35], system="explore"),  # B answers
        call("p", 5, [1, 2, 3, 10, 11, 12, 23, 24, 13, 33, 34], [15]),  # both answers, re-tokenized
    ]
    _spawning(calls, 0, "Agent", "Agent")
    tree = build_trace(calls)
    assert _segments(tree)[1:] == [
        ("subagent", [1, 3], 0, 0, "t00", 5, True),
        ("subagent", [2, 4], 0, 0, "t01", 5, True),
    ]


def test_same_configuration_subagent_is_a_thread_the_main_thread_comes_back_from() -> None:
    calls = [
        call("n", 0, [1, 2, 3, 10], [11]),
        call("n", 1, [1, 2, 3, 40], [41]),  # same system prompt and tools: a fresh context
        call("n", 2, [1, 2, 3, 40, 41, 42], [43, 44, 45, 46]),
        call("n", 3, [1, 2, 3, 10, 11, 12, 43, 44, 45, 46], [15]),  # back on c0, with the answer
    ]
    _spawning(calls, 0, "delegate")
    tree = build_trace(calls)
    assert [c.kind for c in tree.calls] == ["main", "subagent", "subagent", "main"]
    assert _segments(tree) == [
        ("main", [0, 3], -1, None, None, None, True),
        ("subagent", [1, 2], 0, 0, "t00", 3, True),
    ]
    assert [c.reason for c in tree.calls] == [None, "subagent", "subagent", None]


def test_a_branch_the_main_thread_never_comes_back_from_stays_main() -> None:
    regenerated = [call("g", 0, [1, 2, 3], [4, 5]), call("g", 1, [1, 2, 3, 70], [6, 7])]
    regenerated.append(call("g", 2, [1, 2, 3, 70, 6, 7, 8], [9]))
    moving_tail = [
        call("m", 0, [1, 2, 3, 50], [11, 12]),
        call("m", 1, [1, 2, 3, 11, 12, 13, 50], [14, 15]),
        call("m", 2, [1, 2, 3, 11, 12, 13, 14, 15, 16, 50], [17, 18]),
    ]
    for calls in (regenerated, moving_tail):
        tree = build_trace(calls)
        assert [c.kind for c in tree.calls] == ["main"] * 3
        assert _segments(tree) == [("main", [0, 1, 2], -1, None, None, None, True)]


def test_carries_finds_an_answer_retokenized_inside_a_prompt() -> None:
    answer = [500, *range(100, 124), 2]  # first id merges with what precedes, last is end-of-turn
    assert carries([7, 7, 501, *range(100, 124), 9], answer)
    assert carries([*range(100, 116), 0], answer)  # two of the core's three 8-id windows
    assert not carries([*range(100, 108), 0, 0], answer)  # one of three
    assert carries([3, 40, 41], [40, 41, 2]) and not carries([3, 4, 41], [40, 41, 2])  # short: whole
    assert not carries([], [1, 2]) and not carries([1, 2], [])


def test_render_draws_the_links() -> None:
    text = render_text(build_trace(_compaction("b")))
    assert text.endswith(
        "segments:\n"
        "  S0 main  calls b-c0,b-c1  nodes #1,#2\n"
        "  S1 compaction  calls b-c2  nodes #3  <- summarises the context of b-c1 (S0)"
        "  -> resumed by b-c3 (used)\n"
        "  S2 main  calls b-c3,b-c4  nodes #4,#5  <- runs on S1\n"
    )
    assert "segments:" not in render_text(build_trace([call("x", 0, [1, 2], [3])]))
    assert "<h3>segments</h3><pre>  S0 main" in render_html(build_trace(_compaction("b")))


REAL = {
    "claude-code-subagent": [
        ("main", [0, 3], -1, None, None, None, True),
        ("subagent", [1, 2], 0, 0, "toolu", 3, True),
    ],
    "claude-code-compaction": [
        ("main", [0], -1, None, None, None, True),
        ("compaction", [1], 0, 0, None, 2, True),
        ("main", [2], 1, None, None, None, True),
    ],
    "codex-compaction": [
        ("main", [0], -1, None, None, None, True),
        ("compaction", [1], 0, 0, None, 2, True),
        ("main", [2], 1, None, None, None, True),
    ],
    "openclaw-compaction": [
        ("main", [0], -1, None, None, None, True),
        ("compaction", [1], 0, 0, None, 2, True),
        ("main", [2], 1, None, None, None, True),
    ],
}
"""Expected segments per captured folder; a tool call id is checked by its prefix (the proxy makes it)."""


@pytest.mark.parametrize("name", sorted(REAL))
def test_segments_of_real_cli_traffic(name: str) -> None:
    tree = build_trace(replay(FIXTURES / "harness-traffic" / name), reward=1.0)
    assert [(*s[:4], s[4] and s[4][:5], *s[5:]) for s in _segments(tree)] == REAL[name]
    main = [c for c in tree.calls if c.segment == 0]
    assert all(c.kept for c in main) and not any(c.kept for c in tree.calls if c.segment != 0)


def test_segments_of_a_whitebox_rollout() -> None:
    """`whitebox:00020` (compaction context) with `subagents`: the first step goes through `delegate`
    (a helper sub-agent runs it and reports), the fifth call asks for a summary, the rest runs on it."""
    calls = read_calls(FIXTURES / "segments" / "whitebox-00020" / "calls.jsonl")
    assert [t.name for t in calls[0].tool_calls] == ["delegate"]
    assert calls[1].system_digest != calls[0].system_digest  # the helper's own system prompt
    tree = build_trace(calls, reward=1.0)
    assert [c.kind for c in tree.calls] == [
        "main", "subagent", "subagent", "main", "compaction_request", "compacted", "compacted", "compacted",
    ]  # fmt: skip
    assert _segments(tree) == [
        ("main", [0, 3], -1, None, None, None, True),
        ("subagent", [1, 2], 0, 0, calls[0].tool_calls[0].id, 3, True),
        ("compaction", [4], 0, 3, None, 5, True),
        ("main", [5, 6, 7], 2, None, None, None, True),
    ]
    sample = build_trace(
        calls, TraceConfig(keep_compaction=True, keep_subagents=True), reward=1.0
    ).to_sample()
    assert sorted({n.segment for n in sample.nodes}) == [0, 1, 2, 3]
    assert [s.kind for s in sample.segments] == ["main", "subagent", "compaction", "main"]


def test_a_helper_that_runs_on_past_the_main_thread_is_not_taken_for_it() -> None:
    """A real `whitebox:00020` rollout of the credit experiment's cold start (an evaluation,
    2026-12-04): the helper ran three calls, was delegated to again at the third step, and the
    rollout ended in replays; the helper's counted calls (1-3, 10-11) spanned more of it than the main
    thread's (0, 5, 7, 9), and the old rule made the helper the main thread: `exclude` would have
    trained the helper and dropped the agent, and the prompt check stopped the run ("tools removed:
    delegate"). The main thread is the group that starts first."""
    calls = read_calls(FIXTURES / "segments" / "whitebox-00020-long-helper" / "calls.jsonl")
    tree = build_trace(calls, reward=1.0)
    kinds = [c.kind for c in tree.calls]
    assert kinds[:13] == [
        "main", "subagent", "subagent", "subagent", "compaction_request", "compacted", "compaction_request",
        "compacted", "compaction_request", "compacted", "subagent", "subagent", "compaction_request",
    ]  # fmt: skip
    assert set(kinds[13:]) == {"replay"}
    prompt = first_prompt(Rollout(rollout_id="r", task_id="t", harness="whitebox:00020", calls=calls))
    assert prompt is not None and (prompt.call_index, prompt.tools) == (0, ["bash", "delegate"])


def test_a_helper_answer_read_only_by_the_summary_request_was_used() -> None:
    """A real `whitebox:00020` rollout of the credit experiment's RL stage (compact_tokens = 200,
    2026-12-04): the helper's answer lands and the context is over the limit at once, so the main
    thread sends it to be summarised and runs on the summary; no main-thread prompt holds the answer
    itself. It was scored unused (44 of 46 helpers of that arm were, and `credited` gave them 0): the
    summary request, the main thread's own context, reads it."""
    calls = read_calls(FIXTURES / "segments" / "whitebox-00020-summarised-helper" / "calls.jsonl")
    tree = build_trace(calls, reward=1.0)
    assert [c.kind for c in tree.calls] == ["main", "subagent", "subagent", "compaction_request", "compacted"]
    answer = calls[2].output_ids
    assert carries(calls[3].prompt_ids, answer) and not carries(calls[4].prompt_ids, answer)
    assert _segments(tree) == [
        ("main", [0], -1, None, None, None, True),
        ("subagent", [1, 2], 0, 0, calls[0].tool_calls[0].id, 4, True),
        ("compaction", [3], 0, 0, None, 4, True),
        ("main", [4], 2, None, None, None, True),
    ]


def test_the_main_thread_is_the_first_to_offer_tools() -> None:
    """Tool-less side calls a harness makes first are passed over (a quota check, titles); a
    sub-agent that outlasts the main thread, or is cut off by the timeout, is not it; with no tools
    anywhere, the first of two or more calls; with no group of two, the latest call's."""
    from harnessrl.trace.classify import choose_main_group, group_key

    bash = ["bash"]
    quota = call("r", 0, [1], [2], system="quota")
    title = [call("r", i, [1, i], [2], system="title") for i in (1, 6)]
    agent = [call("r", i, [3, i], [4], system="agent", tool_names=bash) for i in (2, 5)]
    helper = [call("r", i, [5, i], [6], system="helper", tool_names=bash) for i in (3, 4, 7, 8)]
    calls = sorted([quota, *title, *agent, *helper], key=lambda c: c.index)
    assert choose_main_group(calls) == group_key(agent[0])
    plain = [c.model_copy(update={"tool_names": []}) for c in calls]
    assert choose_main_group(plain) == group_key(title[0])
    assert choose_main_group([quota, agent[0]]) == group_key(agent[0])
    cut_off = [agent[0], *helper[:2]]  # the rollout's timeout hit while the helper ran
    assert choose_main_group(cut_off) == group_key(agent[0])
