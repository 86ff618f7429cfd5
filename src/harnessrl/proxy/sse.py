"""Server-sent events on the wire: one function to encode an event, and the two keep-alive forms.

JSON is encoded compactly (no spaces, non-ASCII kept as UTF-8), as the real APIs do.
"""

from __future__ import annotations

import json
from typing import Any

COMMENT_KEEPALIVE = b": keep-alive\n\n"
"""An SSE comment line: every SSE parser ignores it (OpenAI dialects)."""

PING_KEEPALIVE = b'event: ping\ndata: {"type":"ping"}\n\n'
"""Anthropic's own keep-alive event."""

DONE = b"data: [DONE]\n\n"
"""End of an OpenAI Chat Completions stream."""


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""One encoder for every event: `json.dumps` with these options builds a new one per call."""


def dumps(obj: Any) -> str:
    """Compact JSON text (the same as `json.dumps(obj, ensure_ascii=False, separators=(",", ":"))`)."""
    return _ENCODER.encode(obj)


def event(data: Any, name: str | None = None) -> bytes:
    """One SSE event: optional `event:` line, one `data:` line of JSON, blank line."""
    payload = dumps(data)
    if name is None:
        return f"data: {payload}\n\n".encode()
    return f"event: {name}\ndata: {payload}\n\n".encode()


def parse_stream(raw: bytes) -> list[tuple[str | None, str]]:
    """Split an SSE byte stream into (event name, data) pairs, skipping comments. Used by tests and the
    benchmark to read what the proxy sent."""
    out: list[tuple[str | None, str]] = []
    for block in raw.decode().split("\n\n"):
        name: str | None = None
        data: list[str] = []
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
        if name is not None or data:
            out.append((name, "\n".join(data)))
    return out
