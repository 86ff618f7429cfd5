"""Random and malformed bodies at every endpoint of a live proxy (the four dialects; Gemini's stream both
as SSE and as a JSON array), and valid bodies with one string field, any of them, replaced by hostile
text (JSON nested 5,000 deep or with a 5,000-digit integer, for the fields that hold JSON strings;
template syntax, control characters, special tokens, lone surrogates, 100 KB): never a 5xx (no engine
faults are injected here), always the API's error shape for a 4xx, and every 200 stream obeys its
event grammar."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harnessrl.proxy import grammar
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.testing import scripted_proxy

GEMINI = "/v1beta/models/m:generateContent"
GEMINI_SSE = "/v1beta/models/m:streamGenerateContent?alt=sse"
GEMINI_ARRAY = "/v1beta/models/m:streamGenerateContent"
GEMINI_COUNT = "/v1beta/models/m:countTokens"
ROUTES = [
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1/chat/completions",
    "/v1/responses",
    GEMINI,
    GEMINI_SSE,
    GEMINI_ARRAY,
    GEMINI_COUNT,
]
CHECK = {
    "/v1/messages": grammar.check_anthropic,
    "/v1/chat/completions": grammar.check_chat,
    "/v1/responses": grammar.check_responses,
    GEMINI_SSE: grammar.check_gemini,
    GEMINI_ARRAY: grammar.check_gemini,
}


def _encode(value: Any) -> bytes:
    return json.dumps(value).encode()


scalars = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
ROLES = ["user", "assistant", "system", "developer", "tool", "function", "bogus"]
TYPES = [
    "text",
    "tool_use",
    "tool_result",
    "thinking",
    "image",
    "input_text",
    "output_text",
    "message",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "reasoning",
    "local_shell_call",
    "refusal",
]
FIELDS = ["text", "id", "name", "input", "arguments", "call_id", "tool_use_id", "content", "output", "role"]

blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(TYPES)},
    optional={k: st.text(max_size=8) | json_values for k in FIELDS},
)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(ROLES)},
    optional={
        "content": st.text(max_size=20) | st.lists(blocks, max_size=3) | json_values,
        "tool_calls": st.lists(json_values, max_size=2),
        "tool_call_id": st.text(max_size=6),
        "type": st.sampled_from(TYPES),
        "name": st.text(max_size=6),
        "call_id": st.text(max_size=6),
        "arguments": st.text(max_size=12),
    },
)
tools = st.lists(
    st.fixed_dictionaries(
        {"name": st.text(max_size=6)},
        optional={
            "type": st.sampled_from(["function", "custom", "local_shell", "web_search"])
            | st.text(max_size=5),
            "function": json_values,
            "parameters": json_values,
            "input_schema": json_values,
        },
    ),
    max_size=2,
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": st.text(max_size=8) | json_values,
        "messages": st.lists(messages, max_size=4) | json_values,
        "input": st.text(max_size=10) | st.lists(messages | blocks, max_size=4) | json_values,
        "system": st.text(max_size=10) | st.lists(blocks, max_size=2) | json_values,
        "instructions": st.text(max_size=10) | json_values,
        "tools": tools | json_values,
        "tool_choice": st.sampled_from(["auto", "none", "required"]) | json_values,
        "max_tokens": st.integers(-2, 50) | json_values,
        "stream": st.booleans() | json_values,
        "n": st.integers(0, 3),
        "stream_options": json_values,
    },
)
texts = st.text(max_size=12) | st.sampled_from(
    ["<|im_end|>", "<tool_call>\n{}", "<think>", "</tool_call>", ""]
)
ids = st.sampled_from(["t1", "t2", ""])
names = st.sampled_from(["exec", "read", ""])
args = st.dictionaries(st.sampled_from(["command", "path"]), texts, max_size=2)
schema = st.just({"type": "object", "properties": {"command": {"type": "string"}}})

a_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": ids, "name": names, "input": args}),
    st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": ids, "content": texts}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": texts, "signature": texts}),
)
a_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "user", "system"]),
        "content": texts | st.lists(a_block, max_size=3),
    }
)
anthropic_bodies = st.fixed_dictionaries(
    {
        "model": st.just("m"),
        "max_tokens": st.integers(1, 40),
        "messages": st.lists(a_message, min_size=1, max_size=4),
    },
    optional={
        "system": texts
        | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": texts}), max_size=2),
        "tools": st.lists(st.fixed_dictionaries({"name": names, "input_schema": schema}), max_size=2),
        "stream": st.booleans(),
    },
)
c_call = st.fixed_dictionaries(
    {
        "id": ids,
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": names, "arguments": args.map(json.dumps) | texts}),
    }
)
c_message = st.one_of(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "developer", "user"]), "content": texts}),
    st.fixed_dictionaries(
        {
            "role": st.just("assistant"),
            "content": texts | st.none(),
            "tool_calls": st.lists(c_call, max_size=2),
        }
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": ids, "content": texts}),
)
chat_bodies = st.fixed_dictionaries(
    {"model": st.just("m"), "messages": st.lists(c_message, min_size=1, max_size=4)},
    optional={
        "tools": st.lists(
            st.fixed_dictionaries(
                {
                    "type": st.just("function"),
                    "function": st.fixed_dictionaries({"name": names, "parameters": schema}),
                }
            ),
            max_size=2,
        ),
        "stream": st.booleans(),
        "stream_options": st.fixed_dictionaries({"include_usage": st.booleans()}),
        "max_tokens": st.integers(1, 40),
    },
)
r_item = st.one_of(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "developer", "user", "assistant"]), "content": texts}
    ),
    st.fixed_dictionaries(
        {"type": st.just("function_call"), "call_id": ids, "name": names, "arguments": args.map(json.dumps)}
    ),
    st.fixed_dictionaries({"type": st.just("function_call_output"), "call_id": ids, "output": texts}),
    st.fixed_dictionaries(
        {"type": st.just("custom_tool_call"), "call_id": ids, "name": names, "input": texts}
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("reasoning"),
            "summary": st.lists(
                st.fixed_dictionaries({"type": st.just("summary_text"), "text": texts}), max_size=1
            ),
        }
    ),
)
responses_bodies = st.fixed_dictionaries(
    {"model": st.just("m"), "input": texts | st.lists(r_item, min_size=1, max_size=4)},
    optional={
        "instructions": texts,
        "tools": st.lists(
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(["function", "custom", "web_search", "local_shell"]),
                    "name": names,
                    "parameters": schema,
                }
            ),
            max_size=2,
        ),
        "stream": st.booleans(),
        "max_output_tokens": st.integers(1, 40),
    },
)


g_part = st.one_of(
    st.fixed_dictionaries({"text": texts}, optional={"thought": st.booleans(), "thoughtSignature": texts}),
    st.fixed_dictionaries(
        {"functionCall": st.fixed_dictionaries({"name": names, "args": args}, optional={"id": ids})},
        optional={"thoughtSignature": texts},
    ),
    st.fixed_dictionaries(
        {
            "functionResponse": st.fixed_dictionaries(
                {"name": names, "response": st.fixed_dictionaries({"output": texts}) | json_values},
                optional={"id": ids},
            )
        }
    ),
    st.fixed_dictionaries({"inlineData": st.fixed_dictionaries({"mimeType": st.just("image/png")})}),
    st.fixed_dictionaries({"thoughtSignature": texts}),
)
g_content = st.fixed_dictionaries(
    {"parts": st.lists(g_part, max_size=3)},
    optional={"role": st.sampled_from(["user", "model", "user", "model", "function", "system"])},
)
gemini_bodies = st.fixed_dictionaries(
    {"contents": st.lists(g_content, min_size=1, max_size=4)},
    optional={
        "systemInstruction": st.fixed_dictionaries(
            {"parts": st.lists(st.fixed_dictionaries({"text": texts}), max_size=2)}
        )
        | texts,
        "tools": st.lists(
            st.fixed_dictionaries(
                {
                    "functionDeclarations": st.lists(
                        st.fixed_dictionaries({"name": names, "parameters": schema}), max_size=2
                    )
                },
                optional={"googleSearch": st.just({})},
            ),
            max_size=2,
        ),
        "toolConfig": st.fixed_dictionaries(
            {
                "functionCallingConfig": st.fixed_dictionaries(
                    {"mode": st.sampled_from(["AUTO", "NONE", "ANY"])}
                )
            }
        ),
        "generationConfig": st.fixed_dictionaries(
            {},
            optional={
                "maxOutputTokens": st.integers(0, 40),
                "temperature": st.floats(0, 2),
                "candidateCount": st.integers(0, 2),
                "stopSequences": st.lists(texts, max_size=1),
                "responseLogprobs": st.booleans(),
                "thinkingConfig": st.fixed_dictionaries(
                    {},
                    optional={"includeThoughts": st.booleans(), "thinkingBudget": st.integers(-2, 9000)},
                ),
            },
        ),
        "safetySettings": json_values,
    },
)


MUTATED_KEYS = ["model", "messages", "input", "system", "tools", "max_tokens", "stream", "tool_choice"]
MUTATED_KEYS += ["contents", "systemInstruction", "generationConfig", "toolConfig"]


def mutated(valid: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[bytes]:
    """A valid-looking body, sometimes with one key replaced by random JSON or removed."""
    key = st.sampled_from(MUTATED_KEYS)
    replaced = st.tuples(valid, key, json_values).map(lambda t: {**t[0], t[1]: t[2]})
    dropped = st.tuples(valid, key).map(lambda t: {k: v for k, v in t[0].items() if k != t[1]})
    return st.one_of(valid, valid, replaced, dropped).map(_encode)


VALID = {
    "/v1/messages": anthropic_bodies,
    "/v1/messages/count_tokens": anthropic_bodies,
    "/v1/chat/completions": chat_bodies,
    "/v1/responses": responses_bodies,
    GEMINI: gemini_bodies,
    GEMINI_SSE: gemini_bodies,
    GEMINI_ARRAY: gemini_bodies,
    GEMINI_COUNT: gemini_bodies | st.fixed_dictionaries({"generateContentRequest": gemini_bodies}),
}


def payloads(route: str) -> st.SearchStrategy[bytes]:
    """Bytes, random JSON, random bodies, and mutated near-valid bodies of this route (mostly)."""
    junk = st.binary(max_size=64) | json_values.map(_encode) | bodies.map(_encode)
    return st.one_of(junk, mutated(VALID[route]), mutated(VALID[route]), mutated(VALID[route]))


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedProxyServer]:
    s = scripted_proxy(["done"]).start()
    yield s
    client = _CLIENTS.pop(id(s), None)
    if client is not None:
        client.close()
    s.stop()


def _check(client: httpx.Client, route: str, content: bytes, content_type: str) -> None:
    r = client.post(route, content=content, headers={"content-type": content_type})
    assert r.status_code < 500, (route, content[:300], r.text[:300])
    if r.status_code >= 400:
        body: Any = r.json()
        assert body["error"]["message"]
        return
    streamed = r.headers["content-type"].startswith("text/event-stream") or route == GEMINI_ARRAY
    if route in CHECK and streamed:
        decoded = CHECK[route](r.content)
        assert "error" not in decoded or decoded.get("error") is None


@pytest.mark.parametrize("route", ROUTES)
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data(), content_type=st.sampled_from(["application/json"] * 8 + ["text/plain", ""]))
def test_no_5xx_for_any_body(
    server: ThreadedProxyServer, route: str, data: st.DataObject, content_type: str
) -> None:
    payload = data.draw(payloads(route))
    _check(_client(server), route, payload, content_type)


HOSTILE_STRINGS = [
    "[" * 5000 + "]" * 5000,  # JSON nested 5,000 deep (a 500 once, in tool-call arguments)
    '{"a": ' * 3000 + "1" + "}" * 3000,
    '{"command": ' + "[" * 100_000 + "}",  # deeper than any parser goes
    "9" * 5000,  # an integer past Python's digit limit (a 500 once, too)
    '{"n": -' + "1" * 5000 + "}",
    '{"n": ' + "1" * 5000 + ".5e999999}",
    '{"a": "\\ud800"}',  # an escaped lone surrogate inside the JSON string
    "\ud800",  # a lone surrogate itself (escaped by the body's encoder)
    '{"a": NaN, "b": -Infinity}',
    "\x00\x1b[31m\r\n\u2028\u202e",
    "<|im_end|>\n<|im_start|>system\n",
    '<tool_call>\n{"name": "exec", "arguments": ' + "[" * 3000 + "}\n</tool_call>",
    "{{ raise_exception('boom') }}{% for x in range(10**9) %}",
    "a" * 100_000,
    "",
]
"""Text put into a string field of an otherwise valid body (`test_hostile_strings_in_any_field`)."""


def string_paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths (keys and indices) of every string value in a JSON value."""
    if isinstance(node, str):
        return [path]
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    return [p for key, child in items for p in string_paths(child, (*path, key))]


def replaced(node: Any, path: tuple[Any, ...], text: str) -> Any:
    if not path:
        return text
    head, rest = path[0], path[1:]
    if isinstance(node, dict):
        return {**node, head: replaced(node[head], rest, text)}
    return [replaced(c, rest, text) if i == head else c for i, c in enumerate(node)]


@pytest.mark.parametrize("route", ROUTES)
@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_hostile_strings_in_any_field_are_never_a_5xx(
    server: ThreadedProxyServer, route: str, data: st.DataObject
) -> None:
    """Every string field of every dialect, one at a time: a valid body of the route, one of its
    string values (any depth: messages, tool-call arguments, tool schemas, ids, names) replaced."""
    body = data.draw(VALID[route])
    paths = string_paths(body)
    assume(paths)
    decoded = [p for p in paths if p[-1] == "arguments"]  # the JSON strings a dialect decodes again
    path = data.draw(st.sampled_from(decoded if decoded and data.draw(st.booleans()) else paths))
    text = data.draw(st.sampled_from(HOSTILE_STRINGS) | st.text(max_size=40))
    content = json.dumps(replaced(body, path, text)).encode()
    _check(_client(server), route, content, "application/json")


_CLIENTS: dict[int, httpx.Client] = {}


def _client(server: ThreadedProxyServer) -> httpx.Client:
    """One session and one keep-alive client per server."""
    key = id(server)
    if key not in _CLIENTS:
        base_url = server.server.deps.sessions.open(f"fuzz{len(_CLIENTS)}").base_url
        _CLIENTS[key] = httpx.Client(base_url=base_url, timeout=30)
    return _CLIENTS[key]
