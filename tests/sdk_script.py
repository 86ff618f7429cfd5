"""The scripted two-turn conversation the official-SDK tests replay through a live proxy
(`test_proxy_sdk.py`, `test_proxy_gemini.py`): a tool call with `ARGS`, then an answer."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.testing import scripted_proxy
from harnessrl.types import ChatMessage, ToolCall

ARGS = {"command": "ls -la"}
TURNS = [
    ChatMessage(
        role="assistant", reasoning="I should list files.", tool_calls=[ToolCall(name="exec", arguments=ARGS)]
    ),
    ChatMessage(role="assistant", reasoning="Listed.", content="There are 3 files."),
]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"command": {"type": "string"}},
    "required": ["command"],
}
"""The JSON schema of the `exec` tool's arguments."""


def scripted_server() -> Iterator[ThreadedProxyServer]:
    """A proxy replaying `TURNS` (thinking on), for a module-scoped fixture to yield from."""
    s = scripted_proxy(TURNS, enable_thinking=True).start()
    yield s
    s.stop()
