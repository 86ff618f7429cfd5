"""Token-in-token-out splicing on the real Qwen3 tokenizer, on constructed chats and on real captures."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_chat_format import ChatMLTokenizer

from harnessrl.chat.format import ChatFormat
from harnessrl.chat.tito import Prompt, Turn, build_prompt, find_turn, messages_match
from harnessrl.chat.tokenizers import qwen3_tokenizer
from harnessrl.types import ChatMessage, ToolCall, ToolSpec

IM_END = 151645
BASH = ToolSpec(name="Bash", parameters={"type": "object", "properties": {"command": {"type": "string"}}})


def m(role: str, content: str = "", **kw: Any) -> ChatMessage:
    return ChatMessage(role=role, content=content, **kw)  # type: ignore[arg-type]


def ls_call(call_id: str = "call_1", cmd: str = "ls") -> ToolCall:
    return ToolCall(id=call_id, name="Bash", arguments={"command": cmd})


@pytest.fixture(scope="module")
def tok() -> Any:
    return qwen3_tokenizer()


def record(
    fmt: ChatFormat, call_id: str, msgs: list[ChatMessage], history: list[Turn], out: ChatMessage
) -> Prompt:
    """Play one call as the proxy does: build the prompt, 'sample' `out`, remember the turn."""
    prompt = build_prompt(fmt, msgs, [BASH], history)
    output_ids = fmt.render_assistant(out)
    remembered = list(msgs) if prompt.messages is None else prompt.messages  # as handler.record_stage
    tools = [BASH] if prompt.tools is None else prompt.tools
    history.append(Turn(call_id, remembered, tools, prompt.ids, output_ids, fmt.parse(output_ids).message()))
    return prompt


def test_a_spliced_turn_remembers_the_earlier_turns_objects(tok: Any) -> None:
    """The client re-sends the whole conversation as new objects on every call; the session keeps one
    copy: a spliced call's Turn holds the matched turn's messages, its output and its tool list, and
    only the appended messages are new. Later calls splice exactly as from the re-sent copies."""
    fmt = ChatFormat(tok, enable_thinking=True)  # prefix-stable: a splice equals the full render
    history: list[Turn] = []
    msgs = [m("system", "Agent."), m("user", "list")]
    p1 = record(fmt, "c1", msgs, history, m("assistant", "Listing.", tool_calls=[ls_call()]))
    assert p1.messages is None and p1.tools is None  # rendered: nothing to share
    resent = [x.model_copy(deep=True) for x in msgs]
    resent += [m("assistant", "Listing.", tool_calls=[ls_call("callone")]), m("tool", "a.txt")]
    tools = [BASH.model_copy(deep=True)]
    p2 = build_prompt(fmt, resent, tools, history)
    assert p2.render == "spliced" and p2.messages is not None
    assert [id(x) for x in p2.messages[:3]] == [id(x) for x in [*history[0].messages, history[0].output]]
    assert p2.messages[3] is resent[3]  # the new tool result is the request's own
    assert p2.tools is history[0].tools
    output_ids = fmt.render_assistant(m("assistant", "Done."))
    history.append(Turn("c2", p2.messages, p2.tools, p2.ids, output_ids, fmt.parse(output_ids).message()))
    again = [x.model_copy(deep=True) for x in resent] + [m("assistant", "Done."), m("user", "thanks")]
    p3 = build_prompt(fmt, again, [BASH], history)
    assert (p3.render, p3.spliced_from) == ("spliced", "c2")
    assert p3.ids == fmt.render(again, [BASH])
    unshared = [history[0], Turn("c2", resent, tools, p2.ids, output_ids, history[1].output)]
    assert build_prompt(fmt, again, [BASH], unshared).ids == p3.ids
    assert all(a is b for a, b in zip(p3.messages or [], [*p2.messages, history[1].output], strict=False))


def test_messages_match_by_content() -> None:
    a = m("assistant", "Ok.", tool_calls=[ls_call("call_1")], reasoning="hidden")
    assert messages_match(a, m("assistant", "Ok.", tool_calls=[ls_call("callx")]))
    assert not messages_match(a, m("assistant", "Ok. ", tool_calls=[ls_call()]))
    assert not messages_match(a, m("assistant", "Ok.", tool_calls=[ls_call(cmd="ls -l")]))
    assert not messages_match(a, m("assistant", "Ok.", tool_calls=[ls_call(), ls_call()]))
    assert not messages_match(a, m("user", "Ok."))
    assert messages_match(m("developer", "S"), m("system", "S"))
    assert messages_match(m("tool", "out", tool_call_id="a", name="Bash"), m("tool", "out", tool_call_id="b"))
    args_order = (
        ToolCall(name="f", arguments={"a": 1, "b": 2}),
        ToolCall(name="f", arguments={"b": 2, "a": 1}),
    )
    assert messages_match(
        m("assistant", tool_calls=[args_order[0]]), m("assistant", tool_calls=[args_order[1]])
    )


def test_tool_round_trips_splice_and_equal_render_when_prefix_stable(tok: Any) -> None:
    """Qwen3 with thinking on and no reasoning is prefix-stable: splicing must give render() exactly."""
    fmt = ChatFormat(tok, enable_thinking=True)
    history: list[Turn] = []
    msgs = [m("system", "Agent."), m("user", "list twice")]
    p1 = record(fmt, "c1", msgs, history, m("assistant", "Listing.", tool_calls=[ls_call()]))
    assert (p1.render, p1.spliced_from, p1.ids) == ("rendered", None, fmt.render(msgs, [BASH]))
    # The harness re-sends history with a rewritten call id.
    msgs += [
        m("assistant", "Listing.", tool_calls=[ls_call("callone")]),
        m("tool", "a.txt", tool_call_id="x"),
    ]
    p2 = record(fmt, "c2", msgs, history, m("assistant", tool_calls=[ls_call("c", "ls -a")]))
    assert (p2.render, p2.spliced_from) == ("spliced", "c1")
    assert p2.ids[: len(p1.ids) + len(history[0].output_ids)] == p1.ids + history[0].output_ids
    assert p2.ids == fmt.render(msgs, [BASH])
    msgs += [m("assistant", tool_calls=[ls_call("d", "ls -a")]), m("tool", ".\na.txt"), m("user", "thanks")]
    p3 = build_prompt(fmt, msgs, [BASH], history)
    assert (p3.render, p3.spliced_from) == ("spliced", "c2")
    assert p3.ids[: len(p2.ids) + len(history[1].output_ids)] == p2.ids + history[1].output_ids
    assert p3.ids == fmt.render(msgs, [BASH])
    suffix = tok.decode(p3.ids[len(p2.ids) + len(history[1].output_ids) :])
    assert suffix == (
        "\n<|im_start|>user\n<tool_response>\n.\na.txt\n</tool_response><|im_end|>\n"
        "<|im_start|>user\nthanks<|im_end|>\n<|im_start|>assistant\n"
    )


def test_splice_keeps_ids_the_template_would_change(tok: Any) -> None:
    """Thinking off: the empty think block of the old generation prompt stays; render() drops it."""
    fmt = ChatFormat(tok)
    history: list[Turn] = []
    msgs = [m("user", "hi")]
    p1 = record(fmt, "c1", msgs, history, m("assistant", "Hello."))
    msgs += [m("assistant", "Hello."), m("user", "bye")]
    p2 = build_prompt(fmt, msgs, [BASH], history)
    assert p2.render == "spliced"
    assert p2.ids[: len(p1.ids) + 3] == [*p1.ids, 9707, 13, IM_END]
    assert p2.ids != fmt.render(msgs, [BASH])
    assert tok.decode(p2.ids).endswith(
        "<|im_start|>assistant\n<think>\n\n</think>\n\nHello.<|im_end|>\n<|im_start|>user\nbye<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )


def test_reasoning_dropped_by_template_is_kept_by_splice(tok: Any) -> None:
    fmt = ChatFormat(tok, enable_thinking=True)
    history: list[Turn] = []
    msgs = [m("user", "2+2?")]
    p1 = record(fmt, "c1", msgs, history, m("assistant", "4", reasoning="Add them."))
    # Chat APIs do not send reasoning back; the match ignores it.
    msgs += [m("assistant", "4"), m("user", "and 3+3?")]
    p2 = build_prompt(fmt, msgs, [BASH], history)
    assert p2.render == "spliced"
    assert "<think>\nAdd them.\n</think>" in tok.decode(p2.ids)
    assert "Add them." not in tok.decode(fmt.render(msgs, [BASH]))
    assert p2.ids[: len(p1.ids)] == p1.ids


def test_changed_history_is_retokenized(tok: Any) -> None:
    fmt = ChatFormat(tok, enable_thinking=True)
    history: list[Turn] = []
    msgs = [m("user", "go")]
    record(fmt, "c1", msgs, history, m("assistant", "Ok.", tool_calls=[ls_call()]))
    tool = m("tool", "a.txt")
    cases = {
        "other arguments": ([*msgs, m("assistant", "Ok.", tool_calls=[ls_call(cmd="pwd")]), tool], [BASH]),
        "other text": ([*msgs, m("assistant", "Ok", tool_calls=[ls_call()]), tool], [BASH]),
        "other user turn": ([m("user", "go!"), m("assistant", "Ok.", tool_calls=[ls_call()]), tool], [BASH]),
        "other tools": ([*msgs, m("assistant", "Ok.", tool_calls=[ls_call()]), tool], []),
        "unrecorded assistant in suffix": (
            [*msgs, m("assistant", "Ok.", tool_calls=[ls_call()]), tool, m("assistant", "x"), m("user", "y")],
            [BASH],
        ),
        "system message in suffix": (
            [*msgs, m("assistant", "Ok.", tool_calls=[ls_call()]), m("system", "!")],
            [BASH],
        ),
    }
    for name, (req, tools) in cases.items():
        p = build_prompt(fmt, req, tools, history)
        assert (p.render, p.spliced_from, p.ids) == ("retokenized", None, fmt.render(req, tools)), name


def test_truncated_output_gets_end_token_in_suffix(tok: Any) -> None:
    fmt = ChatFormat(tok, enable_thinking=True)
    p1 = fmt.render([m("user", "count")], [])
    cut = fmt.render_assistant(m("assistant", "one two three"))[:2]  # as if max_tokens = 2
    out = fmt.parse(cut).message()
    turn = Turn("c1", [m("user", "count")], [], p1, cut, out)
    req = [m("user", "count"), out, m("user", "go on")]
    p2 = build_prompt(fmt, req, [], [turn])
    assert p2.render == "spliced"
    assert p2.ids[: len(p1) + 2] == p1 + cut
    assert (
        tok.decode(p2.ids[len(p1) + 2 :])
        == "<|im_end|>\n<|im_start|>user\ngo on<|im_end|>\n<|im_start|>assistant\n"
    )


def test_most_recent_matching_turn_wins_over_interleaved_subagent(tok: Any) -> None:
    fmt = ChatFormat(tok, enable_thinking=True)
    main = [m("system", "main"), m("user", "task")]
    sub = [m("system", "sub-agent"), m("user", "search")]
    out = fmt.render_assistant(m("assistant", "Ok.", tool_calls=[ls_call()]))
    parsed = fmt.parse(out).message()
    history = [
        Turn("old", main, [BASH], fmt.render(main, [BASH]), out, parsed),
        Turn("sub", sub, [BASH], fmt.render(sub, [BASH]), out, parsed),
        Turn("retry", main, [BASH], fmt.render(main, [BASH]), out, parsed),
        Turn("sub2", [*sub, parsed, m("tool", "r")], [BASH], [1], [2], m("assistant", "found")),
    ]
    req = [*main, parsed, m("tool", "a.txt")]
    assert find_turn(history, req, [BASH]) is history[2]
    assert build_prompt(fmt, req, [BASH], history).spliced_from == "retry"
    assert build_prompt(fmt, [*sub, parsed, m("tool", "r")], [BASH], history).spliced_from == "sub"


def _canonical_anthropic(body: dict[str, Any]) -> tuple[list[ChatMessage], list[ToolSpec]]:
    """A minimal Anthropic -> canonical conversion, enough for the bare Claude Code capture."""

    def text_of(content: Any) -> str:
        return (
            content
            if isinstance(content, str)
            else "".join(b["text"] for b in content if b["type"] == "text")
        )

    msgs = [m("system", "\n".join(b["text"] for b in body["system"]))]
    for msg in body["messages"]:
        blocks = msg["content"] if isinstance(msg["content"], list) else []
        calls = [
            ToolCall(id=b["id"], name=b["name"], arguments=b["input"])
            for b in blocks
            if b["type"] == "tool_use"
        ]
        results = [b for b in blocks if b["type"] == "tool_result"]
        if results:
            msgs += [m("tool", text_of(b["content"]), tool_call_id=b["tool_use_id"]) for b in results]
        else:
            msgs.append(m(msg["role"], text_of(msg["content"]), tool_calls=calls))
    tools = [
        ToolSpec(name=t["name"], description=t["description"], parameters=t["input_schema"])
        for t in body["tools"]
    ]
    return msgs, tools


def test_claude_code_capture_call_two_is_spliced(tok: Any, shared_fixtures: Path) -> None:
    """Call 1 has block content with cache_control; call 2 re-sends it as a string: still spliced."""
    folder = shared_fixtures / "harness-traffic" / "claude-code-bare"
    bodies = [json.loads(p.read_text())["body"] for p in sorted(folder.glob("*.json"))]
    fmt = ChatFormat(tok, enable_thinking=True)
    msgs1, tools = _canonical_anthropic(bodies[0])
    msgs2, tools2 = _canonical_anthropic(bodies[1])
    assert tools2 == tools
    p1 = build_prompt(fmt, msgs1, tools, [])
    call = ToolCall(name="Bash", arguments=bodies[1]["messages"][1]["content"][0]["input"])
    out_ids = fmt.render_assistant(m("assistant", tool_calls=[call]))
    turn = Turn("c1", msgs1, tools, p1.ids, out_ids, fmt.parse(out_ids).message())
    p2 = build_prompt(fmt, msgs2, tools2, [turn])
    assert (p1.render, p2.render, p2.spliced_from) == ("rendered", "spliced", "c1")
    assert p2.ids[: len(p1.ids) + len(out_ids)] == p1.ids + out_ids
    assert p2.ids == fmt.render(msgs2, tools2)
    assert tok.decode(p2.ids[len(p1.ids) + len(out_ids) :]) == (
        "\n<|im_start|>user\n<tool_response>\n(Bash completed with no output)\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n"
    )


# Text the model can send: the tokenizer normalizes to NFC (Qwen's `normalizer`), so decoded output is
# NFC and a harness echoes NFC back; a key like U+1F71 (NFC: U+03AC) could never come from the model.
_TEXT = st.text(alphabet=st.characters(exclude_characters="<>", exclude_categories=("Cs",)), max_size=12).map(
    lambda t: unicodedata.normalize("NFC", t)
)
_ARGS = st.dictionaries(
    st.text(max_size=4).map(lambda t: unicodedata.normalize("NFC", t)),
    st.one_of(st.integers(), _TEXT, st.booleans(), st.none()),
    max_size=3,
)
_CALLS = st.lists(st.builds(ToolCall, name=st.sampled_from(["Bash", "Read"]), arguments=_ARGS), max_size=2)
# One step: what the model says (text, calls), then what the harness adds (tool results, or a user turn).
Step = tuple[str, list[ToolCall], list[str], bool]
_STEPS = st.lists(
    st.tuples(_TEXT, _CALLS, st.lists(_TEXT, min_size=1, max_size=2), st.booleans()), max_size=4
)


@settings(max_examples=40, deadline=None)
@given(first=_TEXT, steps=_STEPS, thinking=st.booleans(), native=st.booleans())
def test_every_call_extends_the_previous_one_exactly(
    tok: Any,
    first: str,
    steps: list[tuple[str, list[ToolCall], list[str], bool]],
    thinking: bool,
    native: bool,
) -> None:
    """A simulated session: each call is spliced onto the previous call's ids. The splice also equals a
    fresh render where the template is prefix-stable: Qwen3 with thinking on (no reasoning), and the
    Hermes fallback on plain ChatML."""
    fmt = ChatFormat(tok if native else ChatMLTokenizer(tok), enable_thinking=thinking)
    history: list[Turn] = []
    msgs = [m("system", "agent"), m("user", first)]
    previous: Prompt | None = None
    for i, (text, calls, env, as_user) in enumerate(steps):
        prompt = record(fmt, f"c{i}", msgs, history, m("assistant", text.strip(), tool_calls=calls))
        if previous is not None:
            before = previous.ids + history[-2].output_ids
            assert (prompt.render, prompt.spliced_from) == ("spliced", f"c{i - 1}")
            assert prompt.ids[: len(before)] == before
        if thinking or not native:
            assert prompt.ids == fmt.render(msgs, [BASH])
        rewritten = [c.model_copy(update={"id": f"harness_{i}_{j}"}) for j, c in enumerate(calls)]
        echoed = history[-1].output.model_copy(update={"tool_calls": rewritten})
        msgs = [*msgs, echoed, *(m("user" if as_user else "tool", e) for e in env)]
        previous = prompt


def _canonical_responses(body: dict[str, Any]) -> tuple[list[ChatMessage], list[ToolSpec]]:
    """A minimal OpenAI Responses -> canonical conversion, enough for the Codex capture."""
    msgs: list[ChatMessage] = []
    for item in body["input"]:
        if item["type"] == "message":
            msgs.append(m(item["role"], "".join(c["text"] for c in item["content"])))
        elif item["type"] == "function_call":
            call = ToolCall(id=item["call_id"], name=item["name"], arguments=json.loads(item["arguments"]))
            msgs.append(m("assistant", tool_calls=[call]))
        elif item["type"] == "function_call_output":
            msgs.append(m("tool", item["output"], tool_call_id=item["call_id"]))
    tools = [
        ToolSpec(
            name=t["name"],
            description=t.get("description", ""),
            parameters=t.get("parameters") or {},
            type=t["type"],
        )
        for t in body["tools"]
        if t["type"] in ("function", "custom")
    ]
    return msgs, tools


@pytest.mark.parametrize("thinking", [False, True])
def test_codex_capture_call_two_is_spliced(tok: Any, shared_fixtures: Path, thinking: bool) -> None:
    """Codex sends its system prompt as two `developer` items and offers a custom (freeform) tool."""
    folder = shared_fixtures / "harness-traffic" / "codex-responses"
    bodies = [json.loads(p.read_text())["body"] for p in sorted(folder.glob("*.json"))]
    fmt = ChatFormat(tok, enable_thinking=thinking)
    msgs1, tools = _canonical_responses(bodies[0])
    msgs2, _ = _canonical_responses(bodies[1])
    assert [x.role for x in msgs2] == ["developer", "developer", "user", "user", "assistant", "tool"]
    p1 = build_prompt(fmt, msgs1, tools, [])
    assert tok.decode(p1.ids).startswith("<|im_start|>system\nYou are Codex")
    assert tok.decode(p1.ids).count("<|im_start|>system") == 1
    out_ids = fmt.render_assistant(msgs2[4])
    turn = Turn("c1", msgs1, tools, p1.ids, out_ids, fmt.parse(out_ids).message())
    p2 = build_prompt(fmt, msgs2, tools, [turn])
    assert (p2.render, p2.spliced_from) == ("spliced", "c1")
    assert p2.ids[: len(p1.ids) + len(out_ids)] == p1.ids + out_ids
    assert (p2.ids == fmt.render(msgs2, tools)) is thinking  # thinking off: the empty think block is kept
