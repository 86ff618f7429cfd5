"""The Dialect protocol: what the proxy needs from one model API (parse a request, format a response).

A dialect is stateless; the handler owns timing (keep-alives) and the order head -> keep-alives ->
events. `stream_head` is what may go out before the turn is generated (Anthropic's message_start; the
OpenAI dialects send nothing early so that an engine error can still become a proper error event).
"""

from __future__ import annotations

from typing import Any, Protocol

from harnessrl.proxy.canonical import CanonicalRequest, Completion


class Dialect(Protocol):
    name: str
    """anthropic | openai_chat | openai_responses | gemini (ModelCall.dialect)."""
    tool_id_prefix: str
    """Prefix of the tool-call ids this API uses (`toolu_`, `call_`)."""
    keepalive: bytes
    """SSE bytes sent while the turn is generated."""
    stream_media_type: str
    """Content type of a streamed response (`text/event-stream`; Gemini's JSON-array stream: JSON)."""

    def parse(self, body: dict[str, Any]) -> CanonicalRequest:
        """Wire request -> canonical request; raises RequestError (a 400 naming the field)."""
        ...

    def response_json(self, req: CanonicalRequest, c: Completion) -> dict[str, Any]:
        """The non-streaming response body."""
        ...

    def stream_head(self, req: CanonicalRequest, response_id: str, prompt_tokens: int) -> list[bytes]:
        """Events that may be sent before generation finishes."""
        ...

    def stream_events(self, req: CanonicalRequest, c: Completion) -> list[bytes]:
        """The rest of the stream, in order, through its terminal event."""
        ...

    def error_json(
        self, status: int, message: str, param: str | None = None, code: str | None = None
    ) -> dict[str, Any]:
        """This API's error body."""
        ...

    def stream_error(self, req: CanonicalRequest, response_id: str, status: int, message: str) -> list[bytes]:
        """Terminal events reporting an error after the stream has started."""
        ...
