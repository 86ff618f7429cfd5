"""Event-grammar checkers for the four streaming APIs: is this SSE stream one a client will accept?

Each checker takes the raw stream bytes, raises `GrammarError` naming the first violation, and returns
the assistant turn the stream encodes (so a test can compare it with the non-streaming JSON). Used by
the tests and the benchmark; they check ordering, indices, ids and that every JSON fragment assembles,
not every optional field of the official schemas.

    anthropic:  message_start ping* (block ping*)* message_delta message_stop   |  ... error
                block = content_block_start(i) content_block_delta(i)* content_block_stop(i), i = 0, 1, ...
    chat:       chunk(role) chunk* chunk(finish_reason) [usage chunk] [DONE]
    responses:  response.created response.in_progress item* (response.completed | response.incomplete)
                item = output_item.added(k) <deltas of k> output_item.done(k); sequence_number = 0, 1, ...
    gemini:     ({} | chunk)* chunk(finishReason)  |  ... {"error"}   (SSE `data:` events or a JSON array)
"""

from __future__ import annotations

import json
from typing import Any

from harnessrl.proxy.sse import parse_stream


class GrammarError(AssertionError):
    """The stream breaks its API's event grammar."""


def _need(cond: bool, message: str) -> None:
    if not cond:
        raise GrammarError(message)


def _json_events(raw: bytes) -> list[tuple[str | None, Any]]:
    out: list[tuple[str | None, Any]] = []
    for name, data in parse_stream(raw):
        out.append((name, data if data == "[DONE]" else json.loads(data)))
    return out


_DELTA_FOR = {
    "text": {"text_delta"},
    "thinking": {"thinking_delta", "signature_delta"},
    "tool_use": {"input_json_delta"},
}


def check_anthropic(raw: bytes) -> dict[str, Any]:
    """-> {"content": [...blocks...], "stop_reason": ..., "usage": {...}} or {"error": {...}}."""
    events = [(n, d) for n, d in _json_events(raw) if n != "ping"]
    for name, data in events:
        _need(
            isinstance(data, dict) and data.get("type") == name, f"event {name!r} carries type {data!r:.80}"
        )
    _need(bool(events), "empty stream")
    if events[-1][0] == "error":
        return {"error": events[-1][1]["error"]}
    _need(events[0][0] == "message_start", f"first event is {events[0][0]!r}, not message_start")
    _need(events[0][1]["message"]["content"] == [], "message_start content must be empty")
    blocks: list[dict[str, Any]] = []
    i = 1
    while events[i][0] == "content_block_start":
        start = events[i][1]
        _need(start["index"] == len(blocks), f"block index {start['index']} out of order")
        block = dict(start["content_block"])
        kind = block["type"]
        _need(kind in _DELTA_FOR, f"unknown block type {kind!r}")
        partial = ""
        i += 1
        while events[i][0] == "content_block_delta":
            delta = events[i][1]["delta"]
            _need(events[i][1]["index"] == start["index"], "delta for another block")
            _need(delta["type"] in _DELTA_FOR[kind], f"{delta['type']} inside a {kind} block")
            if delta["type"] == "input_json_delta":
                partial += delta["partial_json"]
            else:
                field = delta["type"].removesuffix("_delta")
                block[field] = block.get(field, "") + delta[field]
            i += 1
        _need(
            events[i][0] == "content_block_stop" and events[i][1]["index"] == start["index"],
            "block not stopped",
        )
        if kind == "tool_use":
            block["input"] = json.loads(partial) if partial else {}
            _need(isinstance(block["input"], dict), "tool input is not an object")
        blocks.append(block)
        i += 1
    _need(
        [n for n, _ in events[i:]] == ["message_delta", "message_stop"],
        f"tail is {[n for n, _ in events[i:]]}",
    )
    delta = events[i][1]
    _need(delta["delta"]["stop_reason"] in ("end_turn", "tool_use", "max_tokens"), "bad stop_reason")
    return {"content": blocks, "stop_reason": delta["delta"]["stop_reason"], "usage": delta["usage"]}


def check_chat(raw: bytes) -> dict[str, Any]:
    """-> {"content", "reasoning_content", "tool_calls", "finish_reason", "usage"} or {"error": ...}."""
    events = [d for _, d in _json_events(raw)]
    _need(bool(events), "empty stream")
    if isinstance(events[-1], dict) and "error" in events[-1]:
        return {"error": events[-1]["error"]}
    _need(events[-1] == "[DONE]", "stream does not end with [DONE]")
    chunks = events[:-1]
    _need(
        all(isinstance(c, dict) and c.get("object") == "chat.completion.chunk" for c in chunks), "not a chunk"
    )
    _need(len({c["id"] for c in chunks}) == 1, "chunks carry different ids")
    usage = None
    if chunks[-1]["choices"] == []:
        usage = chunks.pop()["usage"]
        _need(
            usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"],
            "usage does not add up",
        )
    _need(chunks[0]["choices"][0]["delta"].get("role") == "assistant", "first chunk has no role")
    finishes = [c["choices"][0]["finish_reason"] for c in chunks]
    _need(
        finishes[-1] is not None and all(f is None for f in finishes[:-1]),
        "finish_reason not only on last chunk",
    )
    content, reasoning = "", ""
    calls: list[dict[str, Any]] = []
    for c in chunks:
        delta = c["choices"][0]["delta"]
        content += delta.get("content") or ""
        reasoning += delta.get("reasoning_content") or ""
        for tc in delta.get("tool_calls") or []:
            if tc["index"] == len(calls):
                _need(
                    bool(tc.get("id")) and tc.get("type") in ("function", "custom"),
                    "tool call starts without id",
                )
                calls.append({"id": tc["id"], "type": tc["type"], "name": "", "arguments": "", "input": ""})
            _need(tc["index"] == len(calls) - 1, "tool call index out of order")
            body = tc.get("function") or tc.get("custom") or {}
            calls[-1]["name"] += body.get("name") or ""
            calls[-1]["arguments"] += body.get("arguments") or ""
            calls[-1]["input"] += body.get("input") or ""
    for call in calls:
        if call["type"] == "function":
            _need(isinstance(json.loads(call["arguments"]), dict), "tool arguments are not a JSON object")
    return {
        "content": content,
        "reasoning_content": reasoning,
        "tool_calls": calls,
        "finish_reason": finishes[-1],
        "usage": usage,
    }


def check_responses(raw: bytes) -> dict[str, Any]:
    """-> the final response object (from the terminal event), checked against the item events."""
    events = _json_events(raw)
    for seq, (name, data) in enumerate(events):
        _need(data.get("type") == name, f"event {name!r} carries type {data.get('type')!r}")
        _need(data.get("sequence_number") == seq, f"sequence_number {data.get('sequence_number')} at {seq}")
    names = [n for n, _ in events]
    _need(names[:2] == ["response.created", "response.in_progress"], f"stream starts with {names[:2]}")
    if names[-1] == "response.failed":
        _need(len(names) == 3, "response.failed after output items")
        return dict(events[-1][1]["response"])
    _need(names[-1] in ("response.completed", "response.incomplete"), f"stream ends with {names[-1]}")
    items: list[dict[str, Any]] = []
    i = 2
    while names[i] == "response.output_item.added":
        k = events[i][1]["output_index"]
        _need(k == len(items), f"output_index {k} out of order")
        item_id = events[i][1]["item"]["id"]
        text = ""
        i += 1
        while names[i] != "response.output_item.done":
            data = events[i][1]
            _need(
                data.get("output_index") == k and data.get("item_id") == item_id,
                f"{names[i]} for another item",
            )
            if str(names[i]).endswith(".delta"):
                text += data["delta"]
            elif names[i] in ("response.output_text.done", "response.reasoning_summary_text.done"):
                _need(data["text"] == text, "done text differs from its deltas")
            elif names[i] == "response.function_call_arguments.done":
                _need(data["arguments"] == text, "done arguments differ from their deltas")
                _need(isinstance(json.loads(text), dict), "arguments are not a JSON object")
            i += 1
        done = events[i][1]
        _need(
            done["output_index"] == k and done["item"]["id"] == item_id, "output_item.done for another item"
        )
        items.append(done["item"])
        i += 1
    _need(i == len(events) - 1, f"unexpected {names[i]} at {i}")
    final = dict(events[-1][1]["response"])
    _need(final["output"] == items, "final output differs from the streamed items")
    return final


def check_gemini(raw: bytes) -> dict[str, Any]:
    """A Gemini stream, SSE (`data:` events) or a JSON array: empty `{}` keep-alives, then response
    chunks whose last carries `finishReason` and `usageMetadata`, or a final `{"error": ...}`. Returns
    the chunks merged: {"parts": [...], "finishReason": ..., "usageMetadata": ...} or {"error": ...}."""
    text = raw.decode()
    if text.lstrip().startswith("["):
        chunks = json.loads(text)
        _need(isinstance(chunks, list), "array stream is not a JSON array")
    else:
        chunks = [json.loads(data) for _, data in parse_stream(raw)]
    chunks = [c for c in chunks if c != {}]
    _need(bool(chunks), "empty stream")
    _need(all(isinstance(c, dict) for c in chunks), "a chunk is not an object")
    if "error" in chunks[-1]:
        _need(set(chunks[-1]) == {"error"}, "error chunk carries more than the error")
        return {"error": chunks[-1]["error"]}
    parts: list[Any] = []
    finish = None
    for k, chunk in enumerate(chunks):
        (candidate,) = chunk["candidates"]
        _need(candidate["index"] == 0 and candidate["content"]["role"] == "model", "bad candidate")
        _need(finish is None, f"chunk {k} after the finishReason")
        parts += candidate["content"]["parts"]
        finish = candidate.get("finishReason")
    _need(finish is not None, "no finishReason")
    for part in parts:
        call = part.get("functionCall")
        _need(call is None or isinstance(call.get("args"), dict), "functionCall args are not an object")
    return {"parts": parts, "finishReason": finish, "usageMetadata": chunks[-1]["usageMetadata"]}
