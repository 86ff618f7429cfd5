"""Anthropic Messages (`POST /v1/messages`, also `/v1/messages/count_tokens`).

Accepted: `system` as a string or text blocks; `role: "system"` entries inside `messages` (Claude Code
sends one); text, `thinking`, `redacted_thinking` (dropped: its content is opaque), `tool_use` and
`tool_result` blocks (`is_error: true` puts "Error: " before the result's text); `image` blocks in
user turns and tool results become a short text placeholder for the text-only policy (or a 400 with
`proxy.images = "reject"`); `tool_choice` none (tools not offered, stray calls dropped) and
`disable_parallel_tool_use` (only the first call of a turn is returned). `cache_control`,
`metadata`, `thinking`, `context_management` and `output_config` are accepted and ignored (they tune
a hosted service, not what the turn means), and so is Claude Code's `x-anthropic-billing-header: ...`
system line (billing telemetry, with a hash of the request's content in it: left in, it made every
task's prompt differ from the 25th token on, so no two tasks shared the ~1,200-token system prompt
in the engine's prefix cache or in a training forest; inference servers strip it for the same
reason). Server tools (`web_search_*`, `code_execution_*`: types
the API itself would execute) are dropped from the tool list. Rejected with a 400 naming the field:
document blocks, client tools without a schema (`bash_*`, `computer_*`), stop sequences, forced
`tool_choice`.

A thinking block's `signature` is a digest of its text: clients store and send it back, nothing
verifies it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

from harnessrl.proxy import sse
from harnessrl.proxy.canonical import (
    IMAGE_PLACEHOLDER,
    CanonicalRequest,
    Completion,
    expect,
    fit_advice,
    join_text,
    optional_int,
    reject_forced_tool_choice,
    text_parts,
    typed_images,
)
from harnessrl.proxy.dialects.base import Endpoint
from harnessrl.types import ChatMessage, RequestError, ToolCall, ToolSpec

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}
_SERVER_TOOL_PREFIXES = ("web_search_", "web_fetch_", "code_execution_")
ERROR_PREFIX = "Error: "
"""Put before the text of a `tool_result` with `is_error: true`, so the model sees that the tool failed."""


def _text_of(content: Any, where: str, images: bool = False) -> str:
    """A string, or a list of text blocks, -> text. With `images`, an image block becomes
    IMAGE_PLACEHOLDER (user turns and tool results); other block types are a 400."""
    kinds: dict[str, str | None] = {"text": "text", "image": None} if images else {"text": "text"}
    return text_parts(content, where, kinds, "is not supported here (text only)")


def _content_blocks(content: Any, where: str, texts: list[str]) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """Each block of a content list but its text blocks: where it is (`messages[i].content[j]`), its
    type, the block. A text block's text is appended to `texts` instead, in order."""
    for j, block in enumerate(expect(content, list, where)):
        bw = f"{where}[{j}]"
        kind = expect(block, dict, bw).get("type")
        if kind == "text":
            texts.append(expect(block.get("text", ""), str, f"{bw}.text"))
        else:
            yield bw, kind, block


def _assistant(content: Any, where: str) -> ChatMessage:
    if isinstance(content, str):
        return ChatMessage(role="assistant", content=content)
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    for bw, kind, block in _content_blocks(content, where, texts):
        if kind == "thinking":
            thoughts.append(expect(block.get("thinking", ""), str, f"{bw}.thinking"))
        elif kind == "redacted_thinking":
            continue
        elif kind == "tool_use":
            name = expect(block.get("name"), str, f"{bw}.name")
            args = expect(block.get("input", {}), dict, f"{bw}.input")
            calls.append(ToolCall(id=str(block.get("id", "")), name=name, arguments=args))
        else:
            raise RequestError(
                f"{bw}.type={kind!r} is not supported in assistant messages", param=f"{bw}.type"
            )
    reasoning = join_text(thoughts) if thoughts else None
    return ChatMessage(role="assistant", content=join_text(texts), reasoning=reasoning, tool_calls=calls)


def _user(content: Any, where: str) -> list[ChatMessage]:
    """A user message -> its tool results (as role=tool messages, in order) then its text, if any."""
    if isinstance(content, str):
        return [ChatMessage(role="user", content=content)]
    out: list[ChatMessage] = []
    texts: list[str] = []
    for bw, kind, block in _content_blocks(content, where, texts):
        if kind == "image":
            texts.append(IMAGE_PLACEHOLDER)
        elif kind == "tool_result":
            call_id = expect(block.get("tool_use_id"), str, f"{bw}.tool_use_id")
            text = _text_of(block.get("content", ""), f"{bw}.content", images=True)
            if block.get("is_error") is True:
                text = ERROR_PREFIX + text
            out.append(ChatMessage(role="tool", content=text, tool_call_id=call_id))
        else:
            raise RequestError(
                f"{bw}.type={kind!r} is not supported (text and tool_result only)", param=f"{bw}.type"
            )
    if texts or not out:
        out.append(ChatMessage(role="user", content=join_text(texts)))
    return out


def _tools(raw: Any) -> list[ToolSpec]:
    tools: list[ToolSpec] = []
    for i, tool in enumerate(expect(raw, list, "tools")):
        where = f"tools[{i}]"
        kind = expect(tool, dict, where).get("type")
        if isinstance(kind, str) and kind.startswith(_SERVER_TOOL_PREFIXES):
            continue
        if kind not in (None, "custom"):
            raise RequestError(
                f"{where}.type={kind!r} is not supported (custom tools only)", param=f"{where}.type"
            )
        schema = tool.get("input_schema", {"type": "object", "properties": {}})
        tools.append(
            ToolSpec(
                name=expect(tool.get("name"), str, f"{where}.name"),
                description=expect(tool.get("description", ""), str, f"{where}.description"),
                parameters=expect(schema, dict, f"{where}.input_schema"),
            )
        )
    return tools


BILLING_LINE = "x-anthropic-billing-header:"
"""Claude Code's first system line: telemetry for a hosted service, not part of what the turn means."""


def _without_billing_line(system: Any) -> Any:
    """`system` without Claude Code's billing line: the first line of a string, or of a text block
    (a block left empty is dropped). Anything else is left for `_text_of` to judge."""
    if isinstance(system, str):
        return system.partition("\n")[2] if system.startswith(BILLING_LINE) else system
    if not isinstance(system, list):
        return system
    out: list[Any] = []
    for block in system:
        text = block.get("text") if isinstance(block, dict) and block.get("type") == "text" else None
        if isinstance(text, str) and text.startswith(BILLING_LINE):
            rest = text.partition("\n")[2]
            if not rest:
                continue
            block = {**block, "text": rest}
        out.append(block)
    return out


def _messages(body: dict[str, Any]) -> list[ChatMessage]:
    out: list[ChatMessage] = []
    system = _without_billing_line(body.get("system"))
    if system is not None and system != "" and system != []:
        out.append(ChatMessage(role="system", content=_text_of(system, "system")))
    for i, msg in enumerate(expect(body.get("messages"), list, "messages")):
        where = f"messages[{i}]"
        role = expect(msg, dict, where).get("role")
        content = msg.get("content", "")
        if role == "user":
            out.extend(_user(content, f"{where}.content"))
        elif role == "assistant":
            out.append(_assistant(content, f"{where}.content"))
        elif role == "system":
            out.append(ChatMessage(role="system", content=_text_of(content, f"{where}.content")))
        else:
            raise RequestError(
                f"{where}.role={role!r} is not one of user, assistant, system", param=f"{where}.role"
            )
    return out


def _count_json(n: int) -> dict[str, Any]:
    return {"input_tokens": n}


class AnthropicDialect:
    name = "anthropic"
    routes: tuple[str, ...] = ("/v1/messages", "/v1/messages/count_tokens")
    tool_id_prefix = "toolu_"
    response_id_prefix = "msg_"
    keepalive = sse.PING_KEEPALIVE
    stream_media_type = "text/event-stream"
    models_paths: tuple[str, ...] = ("/v1/models",)

    def endpoints(self) -> dict[str, Endpoint]:
        return {"/v1/messages": Endpoint(self), "/v1/messages/count_tokens": Endpoint(self, _count_json)}

    def match(self, route: str, query: bytes) -> Endpoint | None:
        return None

    def owns(self, route: str) -> bool:
        return route == "/v1/messages" or route.startswith("/v1/messages/")

    def recognises(self, headers: Mapping[str, str], query: bytes) -> bool:
        """The SDKs send `anthropic-version` always, and the key as `x-api-key` (not as a bearer)."""
        return "anthropic-version" in headers or "x-api-key" in headers

    def count_images(self, raw: bytes, body: dict[str, Any]) -> int:
        return typed_images(raw, body.get("messages"), "image")

    def model_json(self, name: str, context_length: int | None) -> dict[str, Any]:
        return {"id": name, "type": "model", "display_name": name, "created_at": "1970-01-01T00:00:00Z"}

    def models_json(self, names: list[str], context_length: int | None) -> dict[str, Any]:
        data = [self.model_json(n, context_length) for n in names]
        first, last = (names[0], names[-1]) if names else (None, None)
        return {"data": data, "has_more": False, "first_id": first, "last_id": last}

    def overflow(self, prompt_tokens: int, limit: int, what: str) -> tuple[str, str | None, str | None]:
        advice = fit_advice(what, "run Claude Code with `bare`")
        return f"prompt is too long: {prompt_tokens} tokens > {limit} maximum {advice}", None, None

    def parse(self, body: dict[str, Any]) -> CanonicalRequest:
        if body.get("stop_sequences"):
            raise RequestError("stop_sequences is not supported", param="stop_sequences")
        tools = _tools(body.get("tools") or [])
        choice = body.get("tool_choice")
        none = reject_forced_tool_choice(choice, ("auto",))
        serial = isinstance(choice, dict) and choice.get("disable_parallel_tool_use") is True
        return CanonicalRequest(
            dialect=self.name,
            model=str(body.get("model", "")),
            messages=_messages(body),
            tools=[] if none else tools,
            max_tokens=optional_int(body, "max_tokens"),
            stream=body.get("stream") is True,
            tool_choice_none=none,
            parallel_tool_calls=not serial,
        )

    def _blocks(self, c: Completion) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if c.reasoning:
            blocks.append({"type": "thinking", "thinking": c.reasoning, "signature": _signature(c.reasoning)})
        if c.text or not c.tool_calls:
            blocks.append({"type": "text", "text": c.text})
        for tc in c.tool_calls:
            blocks.append({"type": "tool_use", "id": tc.id, "name": tc.name, "input": tc.arguments})
        return blocks

    def _stop_reason(self, c: Completion) -> str:
        if c.finish_reason == "length":
            return "max_tokens"
        return "tool_use" if c.tool_calls else "end_turn"

    def response_json(self, req: CanonicalRequest, c: Completion) -> dict[str, Any]:
        return {
            "id": c.response_id,
            "type": "message",
            "role": "assistant",
            "model": c.model,
            "content": self._blocks(c),
            "stop_reason": self._stop_reason(c),
            "stop_sequence": None,
            "usage": {"input_tokens": c.prompt_tokens, "output_tokens": c.output_tokens},
        }

    def stream_head(self, req: CanonicalRequest, response_id: str, prompt_tokens: int) -> list[bytes]:
        message: dict[str, Any] = {
            "id": response_id,
            "type": "message",
            "role": "assistant",
            "model": req.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": prompt_tokens, "output_tokens": 0},
        }
        return [sse.event({"type": "message_start", "message": message}, "message_start")]

    def stream_events(self, req: CanonicalRequest, c: Completion) -> list[bytes]:
        out: list[bytes] = []
        for index, block in enumerate(self._blocks(c)):
            kind = block["type"]
            start: dict[str, Any]
            if kind == "thinking":
                start = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [
                    {"type": "thinking_delta", "thinking": block["thinking"]},
                    {"type": "signature_delta", "signature": block["signature"]},
                ]
            elif kind == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": block["text"]}]
            else:
                start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                deltas = [{"type": "input_json_delta", "partial_json": sse.dumps(block["input"])}]
            out.append(
                sse.event(
                    {"type": "content_block_start", "index": index, "content_block": start},
                    "content_block_start",
                )
            )
            for delta in deltas:
                out.append(
                    sse.event(
                        {"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta"
                    )
                )
            out.append(sse.event({"type": "content_block_stop", "index": index}, "content_block_stop"))
        delta = {"stop_reason": self._stop_reason(c), "stop_sequence": None}
        usage = {"output_tokens": c.output_tokens}
        out.append(sse.event({"type": "message_delta", "delta": delta, "usage": usage}, "message_delta"))
        out.append(sse.event({"type": "message_stop"}, "message_stop"))
        return out

    def error_json(
        self, status: int, message: str, param: str | None = None, code: str | None = None
    ) -> dict[str, Any]:
        return {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message}}

    def stream_error(self, req: CanonicalRequest, response_id: str, status: int, message: str) -> list[bytes]:
        return [sse.event(self.error_json(status, message), "error")]


def _signature(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]
