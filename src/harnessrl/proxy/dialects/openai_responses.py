"""OpenAI Responses (`POST /v1/responses`): request parsing lives in `responses_input`; this module
formats a completion as a response object or as the event stream.

Output items, in order: `reasoning` (summary text = the model's reasoning; also set as
`encrypted_content` when the client asked for `reasoning.encrypted_content`, so that it comes back
verbatim), one assistant `message`, then one item per tool call (`function_call`, `custom_tool_call`
for freeform tools, `local_shell_call` for `local_shell`). Streams begin with `response.created` and
`response.in_progress` (sent before generation, so an engine error can end the stream with
`response.failed`) and end with `response.completed`, or `response.incomplete` when the output hit
the token cap. `sequence_number` counts every event from 0.
"""

from __future__ import annotations

import time
from typing import Any

from harnessrl.proxy import sse
from harnessrl.proxy.canonical import (
    CanonicalRequest,
    Completion,
    expect,
    optional_int,
    reject_forced_tool_choice,
    typed_images,
)
from harnessrl.proxy.dialects.base import Endpoint
from harnessrl.proxy.dialects.openai_chat import OpenAIModels, openai_overflow
from harnessrl.proxy.dialects.responses_input import LOCAL_SHELL, parse_input, parse_tools
from harnessrl.types import RequestError

_HEAD_EVENTS = 2


def _response(req: CanonicalRequest, response_id: str, created: int, status: str) -> dict[str, Any]:
    return {
        "id": response_id,
        "object": "response",
        "created_at": created,
        "status": status,
        "model": req.model,
        "output": [],
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": None,
    }


class OpenAIResponsesDialect(OpenAIModels):
    name = "openai_responses"
    routes: tuple[str, ...] = ("/v1/responses",)
    response_id_prefix = "resp_"
    models_paths: tuple[str, ...] = ()
    """OpenAI's `/v1/models` is answered by the Chat Completions dialect (the same shape)."""

    def endpoints(self) -> dict[str, Endpoint]:
        return {"/v1/responses": Endpoint(self)}

    def match(self, route: str, query: bytes) -> Endpoint | None:
        return None

    def owns(self, route: str) -> bool:
        return route == "/v1/responses" or route.startswith("/v1/responses/")

    def count_images(self, raw: bytes, body: dict[str, Any]) -> int:
        return typed_images(raw, body.get("input"), "input_image")

    def overflow(self, prompt_tokens: int, limit: int, what: str) -> tuple[str, str | None, str | None]:
        return openai_overflow(prompt_tokens, limit, what, "input")

    def parse(self, body: dict[str, Any]) -> CanonicalRequest:
        text = body.get("text")
        fmt = expect(text, dict, "text").get("format") if text is not None else None
        if isinstance(fmt, dict) and fmt.get("type") not in (None, "text"):
            raise RequestError(f"text.format.type={fmt.get('type')!r} is not supported", param="text.format")
        _check_unsupported(body)
        tools = parse_tools(body.get("tools") or [])
        none = reject_forced_tool_choice(body.get("tool_choice"), ("auto",))
        include = body.get("include") or []
        return CanonicalRequest(
            dialect=self.name,
            model=str(body.get("model", "")),
            messages=parse_input(body),
            tools=[] if none else tools.specs,
            max_tokens=optional_int(body, "max_output_tokens"),
            stream=body.get("stream") is True,
            tool_choice_none=none,
            parallel_tool_calls=body.get("parallel_tool_calls") is not False,
            options={
                "custom_tools": tools.custom,
                "local_shell": tools.local_shell,
                "namespaced": tools.namespaced,
                "encrypted_reasoning": "reasoning.encrypted_content" in include,
            },
        )

    def _items(self, req: CanonicalRequest, c: Completion) -> list[dict[str, Any]]:
        suffix = c.response_id.removeprefix("resp_")
        items: list[dict[str, Any]] = []
        if c.reasoning:
            encrypted = c.reasoning if req.options.get("encrypted_reasoning") else None
            summary = [{"type": "summary_text", "text": c.reasoning}]
            items.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{suffix}",
                    "summary": summary,
                    "encrypted_content": encrypted,
                }
            )
        if c.text or not c.tool_calls:
            content = [{"type": "output_text", "text": c.text, "annotations": []}]
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{suffix}",
                    "status": "completed",
                    "role": "assistant",
                    "content": content,
                }
            )
        namespaced = req.options.get("namespaced") or {}
        for k, tc in enumerate(c.tool_calls):
            name = _wire_name(tc.name, namespaced)
            if tc.type == "custom":
                text = tc.arguments.get("input", "")
                item = {
                    "type": "custom_tool_call",
                    "id": f"ctc_{suffix}_{k}",
                    "call_id": tc.id,
                    **name,
                }
                items.append({**item, "input": text if isinstance(text, str) else sse.dumps(text)})
            elif tc.name == LOCAL_SHELL and req.options.get("local_shell"):
                action = {"type": "exec", **tc.arguments}
                item = {
                    "type": "local_shell_call",
                    "id": f"lsc_{suffix}_{k}",
                    "call_id": tc.id,
                    "status": "completed",
                }
                items.append({**item, "action": action})
            else:
                item = {"type": "function_call", "id": f"fc_{suffix}_{k}", "call_id": tc.id, **name}
                items.append({**item, "arguments": sse.dumps(tc.arguments), "status": "completed"})
        return items

    def _final(self, req: CanonicalRequest, c: Completion) -> dict[str, Any]:
        incomplete = c.finish_reason == "length"
        body = _response(req, c.response_id, c.created, "incomplete" if incomplete else "completed")
        body["output"] = self._items(req, c)
        if incomplete:
            body["incomplete_details"] = {"reason": "max_output_tokens"}
        body["usage"] = {
            "input_tokens": c.prompt_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": c.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": c.prompt_tokens + c.output_tokens,
        }
        return body

    def response_json(self, req: CanonicalRequest, c: Completion) -> dict[str, Any]:
        return self._final(req, c)

    def stream_head(self, req: CanonicalRequest, response_id: str, prompt_tokens: int) -> list[bytes]:
        body = _response(req, response_id, int(time.time()), "in_progress")
        return [
            sse.event(
                {"type": "response.created", "sequence_number": 0, "response": body}, "response.created"
            ),
            sse.event(
                {"type": "response.in_progress", "sequence_number": 1, "response": body},
                "response.in_progress",
            ),
        ]

    def stream_events(self, req: CanonicalRequest, c: Completion) -> list[bytes]:
        events: list[dict[str, Any]] = []
        for index, item in enumerate(self._items(req, c)):
            events.extend(_item_events(index, item))
        final = self._final(req, c)
        events.append({"type": f"response.{final['status']}", "response": final})
        out = []
        for seq, ev in enumerate(events, start=_HEAD_EVENTS):
            ev["sequence_number"] = seq
            out.append(sse.event(ev, ev["type"]))
        return out

    def stream_error(self, req: CanonicalRequest, response_id: str, status: int, message: str) -> list[bytes]:
        body = _response(req, response_id, int(time.time()), "failed")
        body["error"] = {"code": "server_error", "message": message}
        ev = {"type": "response.failed", "sequence_number": _HEAD_EVENTS, "response": body}
        return [sse.event(ev, "response.failed")]


def _wire_name(name: str, namespaced: dict[str, tuple[str, str]]) -> dict[str, str]:
    """`name` (and `namespace`) of a call item: a namespaced tool's call names its namespace apart."""
    if name in namespaced:
        namespace, short = namespaced[name]
        return {"name": short, "namespace": namespace}
    return {"name": name}


_UNSUPPORTED = {
    "conversation": "conversation is not supported (no server-side state is kept; send the full input)",
    "background": "background=true is not supported (responses are generated while the request waits)",
}


def _check_unsupported(body: dict[str, Any]) -> None:
    """Fields that would change what the response means: a 400 naming each."""
    if body.get("conversation") is not None:
        raise RequestError(_UNSUPPORTED["conversation"], param="conversation")
    if body.get("background") is True:
        raise RequestError(_UNSUPPORTED["background"], param="background")
    top = body.get("top_logprobs")
    if top is not None and top != 0:
        raise RequestError(
            "top_logprobs is not supported (the engine records only the sampled token's log-prob)",
            param="top_logprobs",
        )


def _item_events(index: int, item: dict[str, Any]) -> list[dict[str, Any]]:
    """output_item.added, the item's own deltas, output_item.done."""
    kind, item_id = item["type"], item["id"]
    where = {"item_id": item_id, "output_index": index}
    events: list[dict[str, Any]] = []
    if kind == "message":
        text = item["content"][0]["text"]
        part = {"type": "output_text", "text": "", "annotations": []}
        added = {**item, "status": "in_progress", "content": []}
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        events.append({"type": "response.content_part.added", **where, "content_index": 0, "part": part})
        events.append(
            {"type": "response.output_text.delta", **where, "content_index": 0, "delta": text, "logprobs": []}
        )
        events.append(
            {"type": "response.output_text.done", **where, "content_index": 0, "text": text, "logprobs": []}
        )
        done_part = {**part, "text": text}
        events.append({"type": "response.content_part.done", **where, "content_index": 0, "part": done_part})
    elif kind == "reasoning":
        text = item["summary"][0]["text"]
        part = {"type": "summary_text", "text": ""}
        events.append(
            {"type": "response.output_item.added", "output_index": index, "item": {**item, "summary": []}}
        )
        events.append(
            {"type": "response.reasoning_summary_part.added", **where, "summary_index": 0, "part": part}
        )
        events.append(
            {"type": "response.reasoning_summary_text.delta", **where, "summary_index": 0, "delta": text}
        )
        events.append(
            {"type": "response.reasoning_summary_text.done", **where, "summary_index": 0, "text": text}
        )
        done_part = {**part, "text": text}
        events.append(
            {"type": "response.reasoning_summary_part.done", **where, "summary_index": 0, "part": done_part}
        )
    elif kind == "function_call":
        added = {**item, "arguments": "", "status": "in_progress"}
        events.append({"type": "response.output_item.added", "output_index": index, "item": added})
        events.append({"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]})
        events.append(
            {"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]}
        )
    elif kind == "custom_tool_call":
        events.append(
            {"type": "response.output_item.added", "output_index": index, "item": {**item, "input": ""}}
        )
        events.append({"type": "response.custom_tool_call_input.delta", **where, "delta": item["input"]})
        events.append({"type": "response.custom_tool_call_input.done", **where, "input": item["input"]})
    else:
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events
