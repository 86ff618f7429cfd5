"""Parsing model output text: reasoning, Hermes tool calls, and malformed blocks that must not raise."""

from __future__ import annotations

from hypothesis import given, settings
from pieced_text import pieced_text

from harnessrl.chat.parse import ParsedOutput, parse_text, parse_tool_call
from harnessrl.types import ChatMessage, ToolCall


def test_plain_text_is_stripped() -> None:
    assert parse_text("\n  Hello there.\n") == ParsedOutput("Hello there.", None, [], [])


def test_think_block_becomes_reasoning() -> None:
    out = parse_text("<think>\nLet me see.\nOk.\n</think>\n\nThe answer is 4.")
    assert out == ParsedOutput("The answer is 4.", "Let me see.\nOk.", [], [])


def test_close_tag_only_means_reasoning_from_start() -> None:
    out = parse_text("thinking here\n</think>\n\nvisible")
    assert (out.reasoning, out.text, out.malformed) == ("thinking here", "visible", [])


def test_empty_think_block_is_empty_reasoning() -> None:
    out = parse_text("<think>\n\n</think>\n\nhi")
    assert (out.reasoning, out.text) == ("", "hi")


def test_unterminated_think_is_text_and_malformed() -> None:
    raw = 'Start <think>\nhalf a thought <tool_call>{"name": "x", "arguments": {}}</tool_call>'
    out = parse_text(raw)
    assert out.reasoning is None
    assert out.tool_calls == []
    assert out.text == raw
    assert out.malformed == [raw[len("Start ") :]]


def test_one_tool_call() -> None:
    out = parse_text('<tool_call>\n{"name": "Bash", "arguments": {"command": "ls -la"}}\n</tool_call>')
    assert out == ParsedOutput("", None, [ToolCall(name="Bash", arguments={"command": "ls -la"})], [])


def test_arguments_as_json_string_and_parameters_synonym() -> None:
    out = parse_text(
        '<tool_call>{"name": "a", "arguments": "{\\"x\\": [1, 2]}"}</tool_call>'
        '<tool_call>{"name": "b", "parameters": {"y": null}}</tool_call>'
        '<tool_call>{"name": "c"}</tool_call>'
    )
    assert out.tool_calls == [
        ToolCall(name="a", arguments={"x": [1, 2]}),
        ToolCall(name="b", arguments={"y": None}),
        ToolCall(name="c", arguments={}),
    ]
    assert out.malformed == []


def test_text_then_multiple_calls_with_reasoning() -> None:
    raw = (
        "<think>\nTwo files.\n</think>\n\nI will read both.\n"
        '<tool_call>\n{"name": "Read", "arguments": {"path": "a.txt"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "Read", "arguments": {"path": "b.txt"}}\n</tool_call>'
    )
    out = parse_text(raw)
    assert out.reasoning == "Two files."
    assert out.text == "I will read both."
    assert out.tool_calls == [
        ToolCall(name="Read", arguments={"path": "a.txt"}),
        ToolCall(name="Read", arguments={"path": "b.txt"}),
    ]
    assert out.malformed == []


def test_malformed_json_stays_text_next_to_good_call() -> None:
    bad = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"\n</tool_call>'
    good = '<tool_call>{"name": "Read", "arguments": {"path": "x"}}</tool_call>'
    out = parse_text(f"Try: {bad} then {good} end")
    assert out.text == f"Try: {bad} then  end"
    assert out.tool_calls == [ToolCall(name="Read", arguments={"path": "x"})]
    assert out.malformed == [bad]


def test_unknown_shapes_are_malformed() -> None:
    bodies = [
        "[1, 2]",
        '{"arguments": {}}',
        '{"name": 3, "arguments": {}}',
        '{"name": "", "arguments": {}}',
        '{"name": "x", "arguments": [1]}',
        '{"name": "x", "arguments": "not json"}',
        '{"name": "x", "arguments": "[1]"}',
    ]
    for body in bodies:
        assert parse_tool_call(body) is None, body
        block = f"<tool_call>{body}</tool_call>"
        assert parse_text(block) == ParsedOutput(block, None, [], [block])


def test_unterminated_tool_call_is_text_and_malformed() -> None:
    raw = 'Running it.\n<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}'
    out = parse_text(raw)
    assert out.tool_calls == []
    assert out.text == raw
    assert out.malformed == [raw[len("Running it.\n") :]]


def test_message_is_the_assistant_turn() -> None:
    out = ParsedOutput("ok", "why", [ToolCall(name="f", arguments={"a": 1})], [])
    assert out.message() == ChatMessage(
        role="assistant", content="ok", reasoning="why", tool_calls=[ToolCall(name="f", arguments={"a": 1})]
    )


_PIECES = [
    "<think>", "</think>", "<tool_call>", "</tool_call>",
    '{"name": "f", "arguments": {}}', "{", "}", "\n", "x",
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(pieced_text(_PIECES, other_chars=5, parts=12))
def test_parse_never_raises_and_keeps_calls_well_formed(text: str) -> None:
    out = parse_text(text)
    assert isinstance(out.text, str)
    for call in out.tool_calls:
        assert call.name and isinstance(call.arguments, dict)
