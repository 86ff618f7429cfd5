"""What every dialect parses into and formats from: one canonical request and one finished completion.

A dialect module turns its wire request into a `CanonicalRequest` (chat messages, tool specs, caps,
stream flag, and the few formatting options its response needs), and turns a `Completion` back into
its wire JSON or SSE events. Nothing in here knows HTTP, tokens or engines.

Validation that does not depend on the dialect (a tool result that answers no tool call) lives here
too, so each dialect only rejects what is specific to its own wire format.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harnessrl.formats import untrusted_json
from harnessrl.types import ChatMessage, FinishReason, RequestError, ToolCall, ToolSpec


@dataclass
class CanonicalRequest:
    """One model call, independent of the API it arrived through."""

    dialect: str
    """anthropic | openai_chat | openai_responses | gemini."""
    model: str
    """Model name the client asked for (echoed back in responses)."""
    messages: list[ChatMessage]
    tools: list[ToolSpec]
    max_tokens: int | None = None
    """The client's output cap (None = not given); the proxy's own cap applies as well."""
    stream: bool = False
    tool_choice_none: bool = False
    """The client said `tool_choice: none`: tools are not offered, and tool calls the model makes
    anyway are dropped from the response (the sampled ids are kept; the call is tagged)."""
    parallel_tool_calls: bool = True
    """False (`parallel_tool_calls: false`, Anthropic `disable_parallel_tool_use`): only the first tool
    call of a turn is returned; later ones are dropped (the call is tagged)."""
    logprobs: bool = False
    """Chat `logprobs: true`: return the sampled tokens' log-probs."""
    options: dict[str, Any] = field(default_factory=dict)
    """Dialect formatting options: `include_usage`, `custom_tools` (names of freeform tools), ..."""


@dataclass
class Completion:
    """A finished assistant turn, ready to be formatted by a dialect."""

    response_id: str
    model: str
    text: str
    reasoning: str | None
    tool_calls: list[ToolCall]
    """With ids assigned (prefix of the dialect), in output order."""
    finish_reason: FinishReason
    prompt_tokens: int
    output_tokens: int
    created: int
    """Unix seconds."""
    logprobs: list[tuple[str, float]] | None = None
    """(token text, sampling log-prob) of every sampled token, when the client asked (Chat `logprobs`)."""


IMAGE_PLACEHOLDER = "[image omitted: this model reads text only]"
"""What an image part becomes for a text-only policy (`proxy.images = "placeholder"`, the default)."""


def count_parts(node: Any, is_part: Callable[[dict[str, Any]], bool]) -> int:
    """Objects anywhere under `node` for which `is_part` holds (not looking inside those); what a
    dialect's `count_images` walks its messages with."""
    count, stack = 0, [node]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if is_part(node):
                count += 1
                continue
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return count


def typed_images(raw: bytes, node: Any, kind: str) -> int:
    """`count_images` of the APIs whose image parts are objects of `"type": kind`: the walk runs only
    when the body's bytes show the type's name, or a `\\u` escape (which could spell it)."""
    if f'"{kind}"'.encode() not in raw and b"\\u" not in raw:
        return 0
    return count_parts(node, lambda part: part.get("type") == kind)


def fit_advice(what: str, shorter: str = "use a harness with shorter prompts") -> str:
    """The end of every "prompt is too long" message: which bound it hit and how to fit (`shorter`: the
    dialect's hint, e.g. Claude Code's `bare` mode for the Anthropic API)."""
    return f"({what}; to fit, {shorter}, use a model with a longer context, or raise engine.context_length)"


def new_id(prefix: str) -> str:
    """A fresh wire id such as `toolu_3f2a...` (24 hex digits: unique, and valid in every API)."""
    return f"{prefix}{uuid.uuid4().hex[:24]}"


def join_text(parts: list[str]) -> str:
    """Join the text blocks of one message. Blocks are joined with a newline, always the same way, so
    that a string and its one-block list form (Claude Code switches between them) render identically."""
    return "\n".join(parts)


def text_parts(
    content: Any,
    where: str,
    kinds: Mapping[str, str | None],
    unsupported: str = "is not supported (text only)",
) -> str:
    """A message's content as text: a string as it is, or a list of typed parts joined (`join_text`).
    `kinds` maps each part type taken to the field holding its text, or to None for an image
    (IMAGE_PLACEHOLDER: the model reads text only); any other type is a 400,
    `<where>[j].type=<type> <unsupported>`."""
    if isinstance(content, str):
        return content
    texts: list[str] = []
    for j, part in enumerate(expect(content, list, where)):
        pw = f"{where}[{j}]"
        kind = expect(part, dict, pw).get("type")
        if not isinstance(kind, str) or kind not in kinds:
            raise RequestError(f"{pw}.type={kind!r} {unsupported}", param=f"{pw}.type")
        key = kinds[kind]
        texts.append(IMAGE_PLACEHOLDER if key is None else expect(part.get(key, ""), str, f"{pw}.{key}"))
    return join_text(texts)


def field_json(text: str, where: str) -> Any:
    """A JSON string inside a request body (`where` names its field), decoded by the one decoder for
    untrusted JSON under the same limits as the body (`formats.untrusted_json`), or a 400 naming the
    field: never a RecursionError or ValueError (a 500) for nesting or integers it cannot take."""
    try:
        return untrusted_json.loads(text, where)
    except untrusted_json.UntrustedJSONError as e:
        raise RequestError(str(e), param=where) from None


def parse_arguments(raw: Any, where: str) -> dict[str, Any]:
    """Tool-call arguments sent as a JSON string (OpenAI) or an object (Anthropic) -> dict."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if not isinstance(raw, str):
        raise RequestError(f"{where} must be a JSON object or a JSON string", param=where)
    value = field_json(raw, where)
    if not isinstance(value, dict):
        raise RequestError(f"{where} must encode a JSON object", param=where)
    return value


def validate_messages(messages: list[ChatMessage]) -> None:
    """Reject conversations that contradict themselves: empty ones, and tool results whose call id was
    never issued by an earlier assistant turn. Ids are compared within the request only (harnesses
    rewrite ids between calls, consistently within one request)."""
    if not any(m.role != "system" and m.role != "developer" for m in messages):
        raise RequestError("the conversation has no user or assistant message", param="messages")
    issued: set[str] = set()
    for i, m in enumerate(messages):
        if m.role == "assistant":
            issued.update(tc.id for tc in m.tool_calls if tc.id)
        elif m.role == "tool" and m.tool_call_id not in issued:
            raise RequestError(
                f"messages[{i}]: tool result for call id {m.tool_call_id!r} has no matching tool call "
                "in an earlier assistant message",
                param="messages",
            )


def expect(obj: Any, kind: type, where: str) -> Any:
    """Return obj if it has the expected JSON type, else raise a 400 that names the field."""
    if not isinstance(obj, kind) or (kind is int and isinstance(obj, bool)):
        names = {dict: "an object", list: "an array", str: "a string", int: "an integer", bool: "a boolean"}
        raise RequestError(f"{where} must be {names.get(kind, kind.__name__)}", param=where)
    return obj


def optional_int(body: dict[str, Any], key: str) -> int | None:
    """An optional positive integer field."""
    value = body.get(key)
    if value is None:
        return None
    expect(value, int, key)
    if value < 1:
        raise RequestError(f"{key} must be >= 1", param=key)
    return int(value)


def reject_forced_tool_choice(choice: Any, allowed: tuple[str, ...], where: str = "tool_choice") -> bool:
    """tool_choice: `auto`-like values pass; `none`-like values return True (tools are then not offered
    to the model); anything forcing a call (required / any / a named tool) is a 400, because the engine
    samples freely and cannot guarantee it."""
    if choice is None:
        return False
    kind = choice.get("type") if isinstance(choice, dict) else choice
    if kind in allowed:
        return False
    if kind == "none":
        return True
    raise RequestError(
        f"{where}={json.dumps(choice)} forces a tool call, which is not supported", param=where
    )
