"""Parse model output text into assistant text, reasoning and tool calls (Hermes / Qwen format).

The model writes `<think>...</think>` reasoning and `<tool_call>{"name": .., "arguments": {..}}</tool_call>`
blocks. Parsing never raises: a block that is not valid (bad JSON, an unknown shape, no closing tag)
stays in the text exactly as the model wrote it and is also listed in `ParsedOutput.malformed`, so the
proxy can always answer the harness (DESIGN invariant 5) and the trace keeps the evidence.

Left out on purpose: other tool-call dialects (Llama `<|python_tag|>`, Mistral `[TOOL_CALLS]`); the
templates we train with (Qwen3, SmolLM2 with a Hermes tool block) only use this one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harnessrl.formats import untrusted_json
from harnessrl.types import ChatMessage, ToolCall

THINK_OPEN = "<think>"
THINK_CLOSE = "</think>"
CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"


@dataclass
class ParsedOutput:
    """One assistant turn read back from the model's output."""

    text: str
    """Visible text: tool-call blocks and reasoning removed, surrounding whitespace stripped."""
    reasoning: str | None
    """Text inside a `<think>` block (outer newlines stripped, as Qwen3's template does); None if absent."""
    tool_calls: list[ToolCall] = field(default_factory=list)
    """Well-formed tool calls, in order. Ids are left empty: the proxy assigns them."""
    malformed: list[str] = field(default_factory=list)
    """Raw blocks that could not be read (they also stay in `text`)."""

    def message(self) -> ChatMessage:
        """The canonical assistant message for this output."""
        return ChatMessage(
            role="assistant", content=self.text, reasoning=self.reasoning, tool_calls=list(self.tool_calls)
        )


def parse_text(text: str) -> ParsedOutput:
    """Split decoded output text (end-of-turn token already removed) into its parts; never raises."""
    malformed: list[str] = []
    reasoning, rest, tail = _split_reasoning(text, malformed)
    parts, calls = _split_tool_calls(rest, malformed)
    body = "".join(parts) + tail
    return ParsedOutput(text=body.strip(), reasoning=reasoning, tool_calls=calls, malformed=malformed)


def _split_reasoning(text: str, malformed: list[str]) -> tuple[str | None, str, str]:
    """Return (reasoning, text to scan for tool calls, trailing raw text kept verbatim).

    A `</think>` without an opening tag counts as reasoning from the start (templates that put `<think>`
    in the generation prompt). An unterminated `<think>` is malformed: it and everything after it stay
    plain text and are not scanned for tool calls (a truncated thought is not an action).
    """
    open_at = text.find(THINK_OPEN)
    close_at = text.find(THINK_CLOSE)
    if close_at != -1 and (open_at == -1 or open_at > close_at):
        return text[:close_at].strip("\n"), text[close_at + len(THINK_CLOSE) :], ""
    if open_at == -1:
        return None, text, ""
    if close_at == -1:
        malformed.append(text[open_at:])
        return None, text[:open_at], text[open_at:]
    reasoning = text[open_at + len(THINK_OPEN) : close_at].strip("\n")
    rest = text[:open_at] + text[close_at + len(THINK_CLOSE) :]
    return reasoning, rest, ""


def _split_tool_calls(text: str, malformed: list[str]) -> tuple[list[str], list[ToolCall]]:
    """Cut `<tool_call>` blocks out of `text`; return the remaining text pieces and the parsed calls."""
    parts: list[str] = []
    calls: list[ToolCall] = []
    pos = 0
    while True:
        start = text.find(CALL_OPEN, pos)
        if start == -1:
            parts.append(text[pos:])
            return parts, calls
        parts.append(text[pos:start])
        end = text.find(CALL_CLOSE, start + len(CALL_OPEN))
        if end == -1:
            malformed.append(text[start:])
            parts.append(text[start:])
            return parts, calls
        call = parse_tool_call(text[start + len(CALL_OPEN) : end])
        if call is None:
            block = text[start : end + len(CALL_CLOSE)]
            malformed.append(block)
            parts.append(block)
        else:
            calls.append(call)
        pos = end + len(CALL_CLOSE)


def parse_tool_call(body: str) -> ToolCall | None:
    """Read one `{"name": str, "arguments": object | JSON string}` body; None if it is not that shape.

    `parameters` is accepted as a synonym of `arguments` (small models mix them up); missing arguments
    mean `{}`. Anything else (not JSON, a list, a non-string name, arguments that are not an object)
    is None.
    """
    try:
        obj = untrusted_json.loads(body, "tool call")
    except untrusted_json.UntrustedJSONError:
        return None
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not obj["name"]:
        return None
    args: Any = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = untrusted_json.loads(args, "tool call arguments")
        except untrusted_json.UntrustedJSONError:
            return None
    if not isinstance(args, dict):
        return None
    return ToolCall(name=obj["name"], arguments=args)
