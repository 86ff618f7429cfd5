"""Gemini API requests (`generateContent` bodies) -> canonical messages, tools and options.

`contents` is a list of turns, `role` "user" (or absent) / "model" / "function" (older clients put
function responses in a "function" turn), each a list of `parts`:
- user: `text` (joined with a newline), `functionResponse` (a tool result);
- model: `text` (joined without a separator: parts of one turn are fragments of one stream, and Gemini
  CLI concatenates them the same way), `text` with `thought: true` (reasoning), `functionCall`.
`thoughtSignature` (Gemini CLI sends a synthetic one on the first call of each turn), `thought` on
user parts, `partMetadata`, `mediaResolution` and `videoMetadata` are ignored. An image in a user
turn (`inlineData` or `fileData` with an `image/*` MIME type) becomes a short text placeholder for the
text-only policy (or a 400 with `proxy.images = "reject"`). Rejected with a 400 naming the part: a
part with no data (nothing but the ignored fields, or nothing at all), as Google's API does; and,
because this policy cannot read them, other `inlineData` and `fileData`, images in model turns,
`executableCode`, `codeExecutionResult`, `toolCall` / `toolResponse`, a function response with
`parts`. Keys may be snake_case (`camel`).

Function call ids are optional on the wire. A `functionResponse` answers the pending call of the
latest model turn with its `id`, else the first unanswered one with its `name`; calls sent without an
id get a positional one (`<name>#<turn>.<k>`) that never leaves the proxy (the splicer ignores ids).
A response's text is its `output` (or `"Error: " + error`) when that is the only field of
`response`, as Gemini CLI sends them; other responses are shown as compact JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harnessrl.proxy import sse
from harnessrl.proxy.canonical import IMAGE_PLACEHOLDER, expect, join_text
from harnessrl.proxy.dialects.anthropic import ERROR_PREFIX
from harnessrl.types import ChatMessage, RequestError, ToolCall, ToolSpec

UNSUPPORTED_PARTS = (
    "inlineData",
    "fileData",
    "executableCode",
    "codeExecutionResult",
    "toolCall",
    "toolResponse",
)
SERVER_TOOLS = frozenset(
    {
        "googleSearch",
        "googleSearchRetrieval",
        "urlContext",
        "codeExecution",
        "googleMaps",
        "enterpriseWebSearch",
        "fileSearch",
        "retrieval",
    }
)
"""Tools the hosted API would run itself: dropped from the tool list (the model just never uses them),
as the Anthropic dialect drops `web_search_*`."""


def camel(obj: Any) -> Any:
    """A wire object with its snake_case keys in lowerCamelCase (the API's JSON accepts both, e.g.
    `system_instruction`, `function_call`); one level only, so that tool arguments and schemas keep
    their own keys. The object itself when no key has an underscore (the common case)."""
    if not isinstance(obj, dict) or not any("_" in k for k in obj):
        return obj
    return {_camel_key(k): v for k, v in obj.items()}


def _camel_key(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


@dataclass
class _Pending:
    """The function calls of the latest model turn that no functionResponse has answered yet."""

    calls: list[ToolCall] = field(default_factory=list)

    def answer(self, call_id: str | None, name: str) -> str | None:
        """The canonical id of the call answered: by `id`, else the first one named `name`."""
        for same in ((lambda tc: tc.id == call_id) if call_id else None, lambda tc: tc.name == name):
            for i, tc in enumerate(self.calls):
                if same is not None and same(tc):
                    return self.calls.pop(i).id
        return None


def is_image(part: dict[str, Any]) -> bool:
    """An image part: `inlineData` or `fileData` (either key form) with an `image/*` MIME type."""
    part = camel(part)
    for key in ("inlineData", "fileData"):
        blob = camel(part.get(key))
        if isinstance(blob, dict):
            mime = blob.get("mimeType")
            return isinstance(mime, str) and mime.lower().startswith("image/")
    return False


def _no_data(where: str, has: str) -> RequestError:
    return RequestError(f"{where} has no data: it needs text, {has}", param=where)


def _check_part(part: dict[str, Any], where: str) -> None:
    for key in UNSUPPORTED_PARTS:
        if part.get(key) is not None:
            raise RequestError(
                f"{where}.{key} is not supported (this policy reads text, function calls and "
                "function responses only)",
                param=f"{where}.{key}",
            )


def _function_call(raw: Any, where: str, turn: int, k: int) -> ToolCall:
    expect(raw, dict, where)
    name = expect(raw.get("name"), str, f"{where}.name")
    args = raw.get("args")
    args = {} if args is None else expect(args, dict, f"{where}.args")
    call_id = raw.get("id")
    if call_id is not None:
        expect(call_id, str, f"{where}.id")
    return ToolCall(id=call_id or f"{name}#{turn}.{k}", name=name, arguments=args)


def response_text(response: Any, where: str) -> str:
    """A functionResponse's `response` object -> the tool result text the model reads."""
    if response is None:
        return ""
    expect(response, dict, where)
    if len(response) == 1:
        (key, value), *_ = response.items()
        if key == "output" and isinstance(value, str):
            return value
        if key == "error" and isinstance(value, str):
            return ERROR_PREFIX + value
    return sse.dumps(response)


def _model_turn(parts: list[Any], where: str, turn: int) -> ChatMessage:
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    for j, part in enumerate(parts):
        pw = f"{where}[{j}]"
        part = camel(part)
        _check_part(expect(part, dict, pw), pw)
        if part.get("functionCall") is not None:
            calls.append(_function_call(part["functionCall"], f"{pw}.functionCall", turn, len(calls)))
        elif "text" in part:
            text = expect(part["text"], str, f"{pw}.text")
            (thoughts if part.get("thought") is True else texts).append(text)
        elif part.get("functionResponse") is not None:
            raise RequestError(f"{pw}.functionResponse is not allowed in a model turn", param=pw)
        else:
            raise _no_data(pw, "or a functionCall")
    reasoning = "".join(thoughts) if thoughts else None
    return ChatMessage(role="assistant", content="".join(texts), reasoning=reasoning, tool_calls=calls)


def _user_turn(parts: list[Any], where: str, pending: _Pending) -> list[ChatMessage]:
    """A user turn -> its function responses (role=tool, in order) then its text, if any."""
    out: list[ChatMessage] = []
    texts: list[str] = []
    for j, part in enumerate(parts):
        pw = f"{where}[{j}]"
        part = camel(part)
        if is_image(expect(part, dict, pw)):
            texts.append(IMAGE_PLACEHOLDER)
            continue
        _check_part(part, pw)
        fr = part.get("functionResponse")
        if fr is not None:
            fw = f"{pw}.functionResponse"
            expect(fr, dict, fw)
            name = expect(fr.get("name", ""), str, f"{fw}.name")
            call_id = fr.get("id")
            if call_id is not None:
                expect(call_id, str, f"{fw}.id")
            if fr.get("parts"):
                raise RequestError(f"{fw}.parts is not supported (text responses only)", param=f"{fw}.parts")
            matched = pending.answer(call_id, name)
            if matched is None:
                raise RequestError(
                    f"{fw} (name {name!r}, id {call_id!r}) answers no functionCall of the model turn "
                    "before it",
                    param=fw,
                )
            text = response_text(fr.get("response"), f"{fw}.response")
            out.append(ChatMessage(role="tool", content=text, tool_call_id=matched, name=name or None))
        elif "text" in part:
            texts.append(expect(part["text"], str, f"{pw}.text"))
        elif part.get("functionCall") is not None:
            raise RequestError(f"{pw}.functionCall is not allowed in a user turn", param=pw)
        else:
            raise _no_data(pw, "an image or a functionResponse")
    if texts or not out:
        out.append(ChatMessage(role="user", content=join_text(texts)))
    return out


def system_text(raw: Any) -> str:
    """`systemInstruction`: a Content (its `role` is ignored) or, leniently, a string."""
    if isinstance(raw, str):
        return raw
    expect(raw, dict, "systemInstruction")
    texts: list[str] = []
    for j, part in enumerate(expect(raw.get("parts") or [], list, "systemInstruction.parts")):
        pw = f"systemInstruction.parts[{j}]"
        if not isinstance(expect(part, dict, pw).get("text"), str):
            raise RequestError(f"{pw} must be a text part", param=pw)
        texts.append(part["text"])
    return join_text(texts)


def parse_contents(body: dict[str, Any]) -> list[ChatMessage]:
    """`systemInstruction` + `contents` -> canonical messages."""
    out: list[ChatMessage] = []
    system = camel(body.get("systemInstruction"))
    if system is not None:
        text = system_text(system)
        if text:
            out.append(ChatMessage(role="system", content=text))
    pending = _Pending()
    for i, content in enumerate(expect(body.get("contents"), list, "contents")):
        where = f"contents[{i}]"
        role = expect(camel(content), dict, where).get("role") or "user"
        parts = expect(content.get("parts") or [], list, f"{where}.parts")
        if role == "model":
            message = _model_turn(parts, f"{where}.parts", i)
            pending = _Pending(list(message.tool_calls))
            out.append(message)
        elif role in ("user", "function"):
            out.extend(_user_turn(parts, f"{where}.parts", pending))
        else:
            raise RequestError(f"{where}.role={role!r} is not one of user, model", param=f"{where}.role")
    return out


def _lower_types(schema: Any) -> Any:
    """OpenAPI-style schemas (`"type": "OBJECT"`, as the SDKs send them) -> JSON Schema type names, so
    the model sees the same schema whichever form the client used."""
    if isinstance(schema, list):
        return [_lower_types(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _lower_types(v) for k, v in schema.items()}
    kind = out.get("type")
    if isinstance(kind, str):
        out["type"] = kind.lower()
    return out


def _declaration(raw: Any, where: str) -> ToolSpec:
    raw = camel(expect(raw, dict, where))
    name = expect(raw.get("name"), str, f"{where}.name")
    description = expect(raw.get("description") or "", str, f"{where}.description")
    if raw.get("parametersJsonSchema") is not None:
        params = expect(raw["parametersJsonSchema"], dict, f"{where}.parametersJsonSchema")
    elif raw.get("parameters") is not None:
        params = _lower_types(expect(raw["parameters"], dict, f"{where}.parameters"))
    else:
        params = {"type": "object", "properties": {}}
    return ToolSpec(name=name, description=description, parameters=params)


def parse_tools(raw: Any) -> list[ToolSpec]:
    """`tools`: function declarations; hosted tools (SERVER_TOOLS) dropped; anything else a 400."""
    specs: list[ToolSpec] = []
    for i, tool in enumerate(expect(raw, list, "tools")):
        where = f"tools[{i}]"
        for key, value in camel(expect(tool, dict, where)).items():
            if key == "functionDeclarations":
                decls = expect(value or [], list, f"{where}.functionDeclarations")
                specs += [_declaration(d, f"{where}.functionDeclarations[{k}]") for k, d in enumerate(decls)]
            elif key not in SERVER_TOOLS and value is not None:
                raise RequestError(
                    f"{where}.{key} is not supported (functionDeclarations only)", param=f"{where}.{key}"
                )
    return specs


def tool_config(raw: Any, tools: list[ToolSpec]) -> bool:
    """`toolConfig.functionCallingConfig` -> whether tools are off (mode NONE). AUTO passes; ANY and
    VALIDATED (a forced call, constrained decoding) and an `allowedFunctionNames` narrower than the
    declared tools are a 400: the engine samples freely and cannot guarantee them."""
    if raw is None:
        return False
    config = camel(camel(expect(raw, dict, "toolConfig")).get("functionCallingConfig"))
    if config is None:
        return False
    where = "toolConfig.functionCallingConfig"
    mode = expect(config, dict, where).get("mode") or "AUTO"
    if mode not in ("AUTO", "MODE_UNSPECIFIED", "NONE"):
        raise RequestError(f"{where}.mode={mode!r} is not supported (AUTO, NONE)", param=f"{where}.mode")
    allowed = config.get("allowedFunctionNames")
    if allowed:
        names = set(expect(allowed, list, f"{where}.allowedFunctionNames"))
        if not {t.name for t in tools} <= names:
            raise RequestError(
                f"{where}.allowedFunctionNames narrower than the declared functions is not supported",
                param=f"{where}.allowedFunctionNames",
            )
    return bool(mode == "NONE")
