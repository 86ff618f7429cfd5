"""Probe conversations: what `ChatFormat` renders once per format to check that a shortcut (tail-only
suffix rendering, direct template rendering) gives the same text as the long way round."""

from __future__ import annotations

from harnessrl.types import ChatMessage, ToolCall, ToolSpec

PROBE_PARAMS = {"type": "object", "properties": {"x": {"type": "string"}}}


def probe_conversations() -> list[list[ChatMessage]]:
    """Conversations that exercise what a template may render differently in a tail: tool results
    (single and grouped), several user turns, reasoning, text and tool-call turns."""
    call = [ToolCall(id="c1", name="probe_tool", arguments={"x": "1"})]
    sys_ = ChatMessage(role="system", content="probe system")
    return [
        [
            sys_,
            ChatMessage(role="user", content="first"),
            ChatMessage(role="assistant", content="a", reasoning="r1", tool_calls=call),
            ChatMessage(role="tool", content="out1", tool_call_id="c1"),
            ChatMessage(role="assistant", content="", tool_calls=call + call),
            ChatMessage(role="tool", content="out2", tool_call_id="c1"),
            ChatMessage(role="tool", content="out3", tool_call_id="c1"),
            ChatMessage(role="assistant", content="done", reasoning="r2"),
            ChatMessage(role="user", content="second"),
            ChatMessage(role="assistant", content="ok"),
            ChatMessage(role="user", content="third"),
        ],
        [
            ChatMessage(role="user", content="no system"),
            ChatMessage(role="assistant", content="", tool_calls=call),
            ChatMessage(role="tool", content="out", tool_call_id="c1"),
            ChatMessage(role="developer", content="late developer note"),
            ChatMessage(role="assistant", content="bye"),
            ChatMessage(role="user", content="again"),
        ],
    ]


def probe_tool_sets() -> list[list[ToolSpec]]:
    """The tool sets each probe conversation is rendered with: one tool, and none."""
    return [[ToolSpec(name="probe_tool", description="probe", parameters=PROBE_PARAMS)], []]
