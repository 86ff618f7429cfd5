"""OpenAI Responses request parsing: `instructions` + `input` items + `tools` -> canonical messages.

Input items accepted: messages (system / developer / user / assistant; input_text, output_text and
refusal parts), `function_call` / `function_call_output`, `custom_tool_call` / `custom_tool_call_output`
(Codex's freeform `apply_patch`), `local_shell_call` / `local_shell_call_output`, and `reasoning`
(its summary text becomes the reasoning of the assistant turn that follows it). Consecutive assistant
items (reasoning, message, calls) form one assistant turn, as the model produced them.

Tools: function, custom (shown to the model as one string argument `input`), `local_shell` (shown as
a function `local_shell(command: string[], workdir?, timeout_ms?)`), tools with a `parameters`
schema that the client executes itself (Codex's `tool_search`), and `namespace` tools (a group of
function / custom tools; Codex sends one, `multi_agent_v1`, for models it has no metadata for). A
namespaced tool is shown to the model as `<namespace>.<name>` (`namespaced_name`), the qualified
form OpenAI's own models call functions by; its calls go back to the client as `function_call` /
`custom_tool_call` items with `name` and `namespace` apart, the shape of the Responses API, and
those items sent back in `input` are read into the same qualified name. Hosted tools that the API provider
would execute (`web_search`, `file_search`, `code_interpreter`, ...) are dropped: we cannot run them,
and not offering a tool does not change what the conversation means.

`input_image` parts (in messages and tool outputs: Codex's `view_image`) become a short text
placeholder for the text-only policy (or a 400 with `proxy.images = "reject"`). Rejected with a 400
naming the field: files, `item_reference`, `previous_response_id` and `conversation` (no server-side
conversation state is kept), `background`, `top_logprobs` > 0, unknown item types, structured
`text.format`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from harnessrl.proxy.canonical import expect, join_text, parse_arguments, text_parts
from harnessrl.proxy.dialects.openai_chat import freeform_parameters
from harnessrl.types import ChatMessage, RequestError, ToolCall, ToolSpec

LOCAL_SHELL = "local_shell"
_LOCAL_SHELL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "command": {"type": "array", "items": {"type": "string"}, "description": "argv of the command"},
        "workdir": {"type": "string"},
        "timeout_ms": {"type": "integer"},
    },
    "required": ["command"],
}
_HOSTED_TOOLS = {
    "web_search",
    "web_search_preview",
    "file_search",
    "code_interpreter",
    "image_generation",
    "computer_use_preview",
    "mcp",
}
_ASSISTANT_ITEMS = {"reasoning", "function_call", "custom_tool_call", "local_shell_call"}


_PARTS: dict[str, str | None] = {
    **dict.fromkeys(("input_text", "output_text", "text", "summary_text"), "text"),
    "refusal": "refusal",
    "input_image": None,
}
"""The content parts an item may hold: each type's text field (None: an image)."""


def _parts(content: Any, where: str) -> str:
    return text_parts(content, where, _PARTS)


def _output_text(raw: Any, where: str) -> str:
    """A tool output: a string or text parts."""
    return _parts(raw if raw is not None else "", where)


def namespaced_name(namespace: str, name: str) -> str:
    """The name the model sees (and calls) for tool `name` of namespace `namespace`."""
    return f"{namespace}.{name}"


def _item_name(item: dict[str, Any], where: str) -> str:
    name = expect(item.get("name"), str, f"{where}.name")
    namespace = item.get("namespace")
    if namespace is None or namespace == "":
        return name
    return namespaced_name(expect(namespace, str, f"{where}.namespace"), name)


def _call(item: dict[str, Any], kind: str, where: str) -> ToolCall:
    call_id = str(item.get("call_id") or item.get("id") or "")
    if kind == "function_call":
        args = parse_arguments(item.get("arguments"), f"{where}.arguments")
        return ToolCall(id=call_id, name=_item_name(item, where), arguments=args)
    if kind == "custom_tool_call":
        text = expect(item.get("input", ""), str, f"{where}.input")
        return ToolCall(id=call_id, name=_item_name(item, where), arguments={"input": text}, type="custom")
    action = dict(expect(item.get("action"), dict, f"{where}.action"))
    action.pop("type", None)
    return ToolCall(id=call_id, name=LOCAL_SHELL, arguments=action)


class _Builder:
    """Accumulates input items into messages, merging consecutive assistant items into one turn."""

    def __init__(self) -> None:
        self.messages: list[ChatMessage] = []
        self.open: ChatMessage | None = None

    def assistant(self) -> ChatMessage:
        if self.open is None:
            self.open = ChatMessage(role="assistant")
            self.messages.append(self.open)
        return self.open

    def add(self, message: ChatMessage) -> None:
        self.open = None
        self.messages.append(message)

    def item(self, item: Any, where: str) -> None:
        kind = expect(item, dict, where).get("type", "message")
        if kind == "message":
            role = item.get("role")
            text = _parts(item.get("content", ""), f"{where}.content")
            if role == "assistant":
                turn = self.assistant()
                turn.content = join_text([turn.content, text]) if turn.content else text
            elif role in ("system", "developer", "user"):
                self.add(ChatMessage(role=role, content=text))
            else:
                raise RequestError(f"{where}.role={role!r} is not supported", param=f"{where}.role")
        elif kind == "reasoning":
            summary = _parts(item.get("summary") or [], f"{where}.summary")
            turn = self.assistant()
            turn.reasoning = join_text([turn.reasoning, summary]) if turn.reasoning else summary
        elif kind in _ASSISTANT_ITEMS:
            self.assistant().tool_calls.append(_call(item, kind, where))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            call_id = str(item.get("call_id") or item.get("id") or "")
            output = _output_text(item.get("output"), f"{where}.output")
            self.add(ChatMessage(role="tool", content=output, tool_call_id=call_id))
        else:
            raise RequestError(f"{where}.type={kind!r} is not supported", param=f"{where}.type")


def parse_input(body: dict[str, Any]) -> list[ChatMessage]:
    """`instructions` and `input` -> canonical messages."""
    if body.get("previous_response_id"):
        raise RequestError(
            "previous_response_id is not supported (send the full input)", param="previous_response_id"
        )
    builder = _Builder()
    instructions = body.get("instructions")
    if instructions:
        builder.add(ChatMessage(role="system", content=expect(instructions, str, "instructions")))
    raw = body.get("input")
    if isinstance(raw, str):
        builder.add(ChatMessage(role="user", content=raw))
        return builder.messages
    for i, item in enumerate(expect(raw, list, "input")):
        builder.item(item, f"input[{i}]")
    return builder.messages


@dataclass
class Tools:
    """What `parse_tools` read from the request's `tools`."""

    specs: list[ToolSpec] = field(default_factory=list)
    custom: list[str] = field(default_factory=list)
    """Names of freeform tools (as the model sees them)."""
    local_shell: bool = False
    namespaced: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Model-visible name -> (namespace, name) for the tools of `namespace` tools."""


def _function_spec(tool: dict[str, Any], where: str, name: str) -> ToolSpec:
    desc = expect(tool.get("description", ""), str, f"{where}.description")
    params = tool.get("parameters") or {"type": "object", "properties": {}}
    return ToolSpec(name=name, description=desc, parameters=expect(params, dict, f"{where}.parameters"))


def _custom_spec(tool: dict[str, Any], where: str, name: str) -> ToolSpec:
    desc = expect(tool.get("description", ""), str, f"{where}.description")
    return ToolSpec(name=name, description=desc, parameters=freeform_parameters(desc), type="custom")


def _namespace(tool: dict[str, Any], where: str, out: Tools) -> None:
    namespace = expect(tool.get("name"), str, f"{where}.name")
    for j, inner in enumerate(expect(tool.get("tools"), list, f"{where}.tools")):
        iw = f"{where}.tools[{j}]"
        kind = expect(inner, dict, iw).get("type", "function")
        name = expect(inner.get("name"), str, f"{iw}.name")
        qualified = namespaced_name(namespace, name)
        if kind == "function":
            out.specs.append(_function_spec(inner, iw, qualified))
        elif kind == "custom":
            out.specs.append(_custom_spec(inner, iw, qualified))
            out.custom.append(qualified)
        else:
            raise RequestError(f"{iw}.type={kind!r} is not supported (function, custom)", param=f"{iw}.type")
        out.namespaced[qualified] = (namespace, name)


def parse_tools(raw: Any) -> Tools:
    """The request's `tools` -> specs shown to the model, and what formatting the calls needs."""
    out = Tools()
    for i, tool in enumerate(expect(raw, list, "tools")):
        where = f"tools[{i}]"
        kind = expect(tool, dict, where).get("type")
        if kind in _HOSTED_TOOLS:
            continue
        if kind == "custom":
            name = expect(tool.get("name"), str, f"{where}.name")
            out.specs.append(_custom_spec(tool, where, name))
            out.custom.append(name)
        elif kind == LOCAL_SHELL:
            out.specs.append(
                ToolSpec(name=LOCAL_SHELL, description="Run a shell command.", parameters=_LOCAL_SHELL_SCHEMA)
            )
            out.local_shell = True
        elif kind == "namespace":
            _namespace(tool, where, out)
        elif kind == "function" or isinstance(tool.get("parameters"), dict):
            out.specs.append(
                _function_spec(tool, where, expect(tool.get("name", kind), str, f"{where}.name"))
            )
        else:
            raise RequestError(f"{where}.type={kind!r} is not supported", param=f"{where}.type")
    return out
