"""Prefix trees of real captured harness traffic, as the proxy records it.

Each fixture's two requests are sent as captured to a live proxy (scripted engine answering with the
fixture's own replies, real Qwen3 tokenizer and chat format), and the ModelCall records the proxy
captured are traced. Claude Code (full and bare), Codex and OpenClaw over the Responses API send call 2
as an exact extension of call 1, so the tree is one chain. OpenClaw over Chat Completions and
Anthropic Messages moves its `<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>` user message to the end of every
request, so call 2 leaves call 1 just before that message: the tree branches there, the proxy marks
call 2 `retokenized`, and both leaves stay alive (call 1's output was consumed, only re-rendered).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from traffic_replay import replay

from harnessrl.commands.trace import load_decoder
from harnessrl.trace import build_trace
from harnessrl.trace.views import render_html
from harnessrl.types import ModelCall

CHAINS = ["claude-code", "claude-code-bare", "codex-responses", "openclaw-responses"]
MOVING_TAIL = ["openclaw-chat", "openclaw-anthropic"]


@pytest.fixture(scope="module")
def captured_calls(shared_fixtures: Path) -> dict[str, list[ModelCall]]:
    """folder -> the two ModelCalls the proxy recorded for that fixture's traffic."""
    return {name: replay(shared_fixtures / "harness-traffic" / name) for name in CHAINS + MOVING_TAIL}


def _shape(calls: list[ModelCall]) -> list[tuple[int, int, int, bool, list[str]]]:
    """(parent, tokens, model tokens, kept, calls ending) per node."""
    tree = build_trace(calls, reward=1.0)
    return [(n.parent, len(n.tokens), sum(n.model_mask), n.kept, n.call_ids) for n in tree.nodes]


@pytest.mark.parametrize("name", CHAINS)
def test_extending_harnesses_give_one_chain(captured_calls: dict[str, list[ModelCall]], name: str) -> None:
    first, second = captured_calls[name]
    tree = build_trace([first, second], reward=1.0)
    n1 = len(first.prompt_ids) + len(first.output_ids)
    n2 = len(second.prompt_ids) + len(second.output_ids)
    assert _shape([first, second]) == [
        (-1, n1, len(first.output_ids), True, [first.call_id]),
        (0, n2 - n1, len(second.output_ids), True, [second.call_id]),
    ]
    assert [c.kind for c in tree.calls] == ["main", "main"]
    assert tree.calls[1].matched == n1
    assert tree.to_sample().paths == [[0, 1]]
    s = tree.stats
    assert (s["live_leaves"], s["dead_leaves"], s["retokenized"]) == (1, 0, 0)
    assert (s["tokens_per_call"], s["tokens_paths"], s["tokens_unique"]) == (n1 + n2, n2, n2)


@pytest.mark.parametrize("name", MOVING_TAIL)
def test_moving_tail_message_branches(captured_calls: dict[str, list[ModelCall]], name: str) -> None:
    first, second = captured_calls[name]
    assert second.render == "retokenized"
    tree = build_trace([first, second], reward=1.0)
    shared = tree.calls[1].matched
    # The branch point is inside call 1's prompt: the tail message that call 2 moved past the new turn.
    assert 0 < shared < len(first.prompt_ids)
    assert _shape([first, second]) == [
        (-1, shared, 0, True, []),
        (
            0,
            len(first.prompt_ids) + len(first.output_ids) - shared,
            len(first.output_ids),
            True,
            [first.call_id],
        ),
        (
            0,
            len(second.prompt_ids) + len(second.output_ids) - shared,
            len(second.output_ids),
            True,
            [second.call_id],
        ),
    ]
    decode = load_decoder("qwen3")
    assert "OPENCLAW_INTERNAL_CONTEXT" in decode(first.prompt_ids[shared:])
    assert [(c.kind, c.restart, c.dead) for c in tree.calls] == [
        ("main", False, False),
        ("main", True, False),
    ]
    assert tree.to_sample().paths == [[0, 1], [0, 2]]
    assert (tree.stats["live_leaves"], tree.stats["retokenized"], tree.stats["branch_points"]) == (2, 1, 1)


def test_fixture_tree_renders_decoded_html(captured_calls: dict[str, list[ModelCall]]) -> None:
    page = render_html(build_trace(captured_calls["claude-code-bare"]), load_decoder("qwen3"))
    assert "printf hi &gt; hello.txt" in page
    assert "&lt;|im_start|&gt;system" in page
    assert '<pre class="model">done&lt;|im_end|&gt;</pre>' in page
