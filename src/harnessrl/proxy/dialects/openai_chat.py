"""OpenAI Chat Completions (`POST /v1/chat/completions`).

Accepted: system / developer / user / assistant / tool messages with string, null or text-part
content; assistant `tool_calls` (function and custom); `reasoning_content` (or `reasoning`) on
assistant messages, the field vLLM-style servers use, which is also where this proxy returns reasoning;
`tools` (function and custom); `tool_choice` auto / none (none: tools not offered, stray calls
dropped); `parallel_tool_calls: false` (only the first call of a turn is returned);
`stream_options.include_usage`; `max_completion_tokens` / `max_tokens`; `logprobs: true` (every
sampled token with its sampling log-prob, in OpenAI's `choices[].logprobs.content` shape; in a
stream, on the last chunk); `image_url` parts become a short text placeholder (or a 400 with
`proxy.images = "reject"`). Ignored: `temperature`, `top_p`, `seed`, `user`, `metadata`, `store`
(sampling is the trainer's, not the harness's). Rejected with a 400 naming the field: `n` > 1,
audio / file parts, `stop`, `top_logprobs` > 0, a structured `response_format`, forced
`tool_choice`, legacy `function` messages.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harnessrl.proxy import sse
from harnessrl.proxy.canonical import (
    CanonicalRequest,
    Completion,
    expect,
    fit_advice,
    optional_int,
    parse_arguments,
    reject_forced_tool_choice,
    text_parts,
    typed_images,
)
from harnessrl.proxy.dialects.base import Endpoint
from harnessrl.types import ChatMessage, RequestError, ToolCall, ToolSpec

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    404: "not_found_error",
    413: "invalid_request_error",
    429: "rate_limit_error",
}


def openai_error(
    status: int, message: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    """The error body shared by both OpenAI APIs."""
    kind = _ERROR_TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


class OpenAIModels:
    """What both OpenAI dialects answer alike: OpenAI's model list and error body, tool call ids,
    server-sent events with comment keepalives, and no header of their own."""

    tool_id_prefix = "call_"
    keepalive = sse.COMMENT_KEEPALIVE
    stream_media_type = "text/event-stream"

    def error_json(
        self, status: int, message: str, param: str | None = None, code: str | None = None
    ) -> dict[str, Any]:
        return openai_error(status, message, param, code)

    def recognises(self, headers: Mapping[str, str], query: bytes) -> bool:
        """OpenAI's clients send nothing only they send (a bearer key is everyone's): OpenAI's shape is
        the registry's fallback instead."""
        return False

    def model_json(self, name: str, context_length: int | None) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 0, "owned_by": "harnessrl"}

    def models_json(self, names: list[str], context_length: int | None) -> dict[str, Any]:
        return {"object": "list", "data": [self.model_json(n, context_length) for n in names]}


def openai_overflow(prompt_tokens: int, limit: int, what: str, param: str) -> tuple[str, str, str]:
    """OpenAI's `context_length_exceeded` 400 (both APIs; `param` names the messages field)."""
    message = (
        f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
        f"{prompt_tokens} tokens. Please reduce the length of the messages. {fit_advice(what)}"
    )
    return message, param, "context_length_exceeded"


def _logprobs(c: Completion) -> dict[str, Any] | None:
    """OpenAI's `logprobs` object for every sampled token (the end-of-turn token included), or None."""
    if c.logprobs is None:
        return None
    content = [
        {"token": text, "logprob": lp, "bytes": list(text.encode()), "top_logprobs": []}
        for text, lp in c.logprobs
    ]
    return {"content": content, "refusal": None}


def freeform_parameters(description: str) -> dict[str, Any]:
    """JSON schema shown to the model for a freeform (custom) tool: one string argument `input`."""
    return {"type": "object", "properties": {"input": {"type": "string", "description": description}}}


_PARTS: dict[str, str | None] = {"text": "text", "refusal": "refusal", "image_url": None}
"""The content parts a message may hold: each type's text field (None: an image)."""


def _content(content: Any, where: str) -> str:
    return text_parts("" if content is None else content, where, _PARTS)


def _tool_call(raw: Any, where: str) -> ToolCall:
    kind = expect(raw, dict, where).get("type", "function")
    call_id = str(raw.get("id", ""))
    if kind == "custom":
        custom = expect(raw.get("custom"), dict, f"{where}.custom")
        text = expect(custom.get("input", ""), str, f"{where}.custom.input")
        name = expect(custom.get("name"), str, f"{where}.custom.name")
        return ToolCall(id=call_id, name=name, arguments={"input": text}, type="custom")
    if kind != "function":
        raise RequestError(f"{where}.type={kind!r} is not supported", param=f"{where}.type")
    fn = expect(raw.get("function"), dict, f"{where}.function")
    args = parse_arguments(fn.get("arguments"), f"{where}.function.arguments")
    return ToolCall(id=call_id, name=expect(fn.get("name"), str, f"{where}.function.name"), arguments=args)


def _message(raw: Any, where: str) -> ChatMessage:
    role = expect(raw, dict, where).get("role")
    content = _content(raw.get("content"), f"{where}.content")
    if role in ("system", "developer", "user"):
        return ChatMessage(role=role, content=content)
    if role == "assistant":
        calls = [
            _tool_call(tc, f"{where}.tool_calls[{k}]") for k, tc in enumerate(raw.get("tool_calls") or [])
        ]
        reasoning = raw.get("reasoning_content", raw.get("reasoning"))
        if reasoning is not None:
            expect(reasoning, str, f"{where}.reasoning_content")
        return ChatMessage(role="assistant", content=content, reasoning=reasoning or None, tool_calls=calls)
    if role == "tool":
        call_id = expect(raw.get("tool_call_id"), str, f"{where}.tool_call_id")
        return ChatMessage(role="tool", content=content, tool_call_id=call_id, name=raw.get("name"))
    raise RequestError(f"{where}.role={role!r} is not supported", param=f"{where}.role")


def _tools(raw: Any) -> tuple[list[ToolSpec], list[str]]:
    tools: list[ToolSpec] = []
    custom: list[str] = []
    for i, tool in enumerate(expect(raw, list, "tools")):
        where = f"tools[{i}]"
        kind = expect(tool, dict, where).get("type", "function")
        if kind == "function":
            fn = expect(tool.get("function"), dict, f"{where}.function")
            params = fn.get("parameters") or {"type": "object", "properties": {}}
            tools.append(
                ToolSpec(
                    name=expect(fn.get("name"), str, f"{where}.function.name"),
                    description=expect(fn.get("description", ""), str, f"{where}.function.description"),
                    parameters=expect(params, dict, f"{where}.function.parameters"),
                )
            )
        elif kind == "custom":
            spec = expect(tool.get("custom"), dict, f"{where}.custom")
            name = expect(spec.get("name"), str, f"{where}.custom.name")
            desc = expect(spec.get("description", ""), str, f"{where}.custom.description")
            tools.append(
                ToolSpec(name=name, description=desc, parameters=freeform_parameters(desc), type="custom")
            )
            custom.append(name)
        else:
            raise RequestError(f"{where}.type={kind!r} is not supported", param=f"{where}.type")
    return tools, custom


def _check_unsupported(body: dict[str, Any]) -> None:
    n = body.get("n")
    if n is not None and n != 1:
        raise RequestError("n must be 1: one completion per request", param="n")
    if body.get("stop"):
        raise RequestError("stop is not supported", param="stop")
    top = body.get("top_logprobs")
    if top is not None and top != 0:
        raise RequestError(
            "top_logprobs is not supported (the engine records only the sampled token's log-prob)",
            param="top_logprobs",
        )
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in (None, "text"):
        raise RequestError(
            f"response_format.type={fmt.get('type')!r} is not supported", param="response_format"
        )


class OpenAIChatDialect(OpenAIModels):
    name = "openai_chat"
    routes: tuple[str, ...] = ("/v1/chat/completions",)
    response_id_prefix = "chatcmpl-"
    models_paths: tuple[str, ...] = ("/v1/models",)

    def endpoints(self) -> dict[str, Endpoint]:
        return {"/v1/chat/completions": Endpoint(self)}

    def match(self, route: str, query: bytes) -> Endpoint | None:
        return None

    def owns(self, route: str) -> bool:
        return route.startswith("/v1/chat/")

    def count_images(self, raw: bytes, body: dict[str, Any]) -> int:
        return typed_images(raw, body.get("messages"), "image_url")

    def overflow(self, prompt_tokens: int, limit: int, what: str) -> tuple[str, str | None, str | None]:
        return openai_overflow(prompt_tokens, limit, what, "messages")

    def parse(self, body: dict[str, Any]) -> CanonicalRequest:
        _check_unsupported(body)
        messages = [
            _message(m, f"messages[{i}]")
            for i, m in enumerate(expect(body.get("messages"), list, "messages"))
        ]
        tools, custom = _tools(body.get("tools") or [])
        none = reject_forced_tool_choice(body.get("tool_choice"), ("auto",))
        options = body.get("stream_options") or {}
        expect(options, dict, "stream_options")
        max_tokens = optional_int(body, "max_completion_tokens") or optional_int(body, "max_tokens")
        return CanonicalRequest(
            dialect=self.name,
            model=str(body.get("model", "")),
            messages=messages,
            tools=[] if none else tools,
            max_tokens=max_tokens,
            stream=body.get("stream") is True,
            tool_choice_none=none,
            parallel_tool_calls=body.get("parallel_tool_calls") is not False,
            logprobs=body.get("logprobs") is True,
            options={"include_usage": options.get("include_usage") is True, "custom_tools": custom},
        )

    def _finish(self, c: Completion) -> str:
        if c.finish_reason == "length":
            return "length"
        return "tool_calls" if c.tool_calls else "stop"

    def _wire_call(self, tc: ToolCall) -> dict[str, Any]:
        if tc.type == "custom":
            return {
                "id": tc.id,
                "type": "custom",
                "custom": {"name": tc.name, "input": tc.arguments.get("input", "")},
            }
        return {
            "id": tc.id,
            "type": "function",
            "function": {"name": tc.name, "arguments": sse.dumps(tc.arguments)},
        }

    def _usage(self, c: Completion) -> dict[str, int]:
        total = c.prompt_tokens + c.output_tokens
        return {"prompt_tokens": c.prompt_tokens, "completion_tokens": c.output_tokens, "total_tokens": total}

    def response_json(self, req: CanonicalRequest, c: Completion) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": c.text if c.text or not c.tool_calls else None,
        }
        if c.reasoning:
            message["reasoning_content"] = c.reasoning
        if c.tool_calls:
            message["tool_calls"] = [self._wire_call(tc) for tc in c.tool_calls]
        choice = {"index": 0, "message": message, "finish_reason": self._finish(c), "logprobs": _logprobs(c)}
        return {
            "id": c.response_id,
            "object": "chat.completion",
            "created": c.created,
            "model": c.model,
            "choices": [choice],
            "usage": self._usage(c),
        }

    def stream_head(self, req: CanonicalRequest, response_id: str, prompt_tokens: int) -> list[bytes]:
        return []

    def stream_events(self, req: CanonicalRequest, c: Completion) -> list[bytes]:
        include_usage = bool(req.options.get("include_usage"))

        def chunk(delta: dict[str, Any], finish: str | None = None, logprobs: Any = None) -> bytes:
            body: dict[str, Any] = {
                "id": c.response_id,
                "object": "chat.completion.chunk",
                "created": c.created,
                "model": c.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": logprobs}],
            }
            if include_usage:
                body["usage"] = None
            return sse.event(body)

        out = [chunk({"role": "assistant", "content": ""})]
        if c.reasoning:
            out.append(chunk({"reasoning_content": c.reasoning}))
        if c.text:
            out.append(chunk({"content": c.text}))
        for index, tc in enumerate(c.tool_calls):
            wire = self._wire_call(tc)
            if tc.type == "custom":
                out.append(chunk({"tool_calls": [{"index": index, **wire}]}))
                continue
            head = {
                "index": index,
                "id": tc.id,
                "type": "function",
                "function": {"name": tc.name, "arguments": ""},
            }
            out.append(chunk({"tool_calls": [head]}))
            args = wire["function"]["arguments"]
            out.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": args}}]}))
        out.append(chunk({}, self._finish(c), _logprobs(c)))
        if include_usage:
            usage = {
                "id": c.response_id,
                "object": "chat.completion.chunk",
                "created": c.created,
                "model": c.model,
            }
            out.append(sse.event({**usage, "choices": [], "usage": self._usage(c)}))
        out.append(sse.DONE)
        return out

    def stream_error(self, req: CanonicalRequest, response_id: str, status: int, message: str) -> list[bytes]:
        return [sse.event(openai_error(status, message))]
