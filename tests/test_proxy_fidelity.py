"""Protocol fidelity on the wire: context overflow as each API's 400, the output cap, tool_choice none,
parallel tool calls, unknown tools, Chat log-probs, fields that get a 400, tool_result is_error,
images for a text-only policy, Codex's namespace tools. Real proxy on 127.0.0.1, scripted engine,
real Qwen3 tokenizer, exact wire JSON."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest

from harnessrl.config import ProxyConfig, SamplingConfig
from harnessrl.proxy import grammar
from harnessrl.proxy.canonical import IMAGE_PLACEHOLDER
from harnessrl.proxy.dialects import DIALECTS, resolve
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.sse import parse_stream
from harnessrl.proxy.testing import scripted_proxy
from harnessrl.types import ChatMessage, ModelCall, ToolCall

EXEC = ToolCall(name="exec", arguments={"command": "ls"})
TOOL_TURN = ChatMessage(role="assistant", tool_calls=[EXEC])
TWO_CALLS = ChatMessage(
    role="assistant", tool_calls=[EXEC, ToolCall(name="exec", arguments={"command": "pwd"})]
)
EXEC_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}}
A_TOOLS = [{"name": "exec", "description": "run", "input_schema": EXEC_SCHEMA}]
C_TOOLS = [{"type": "function", "function": {"name": "exec", "parameters": EXEC_SCHEMA}}]
R_TOOLS = [{"type": "function", "name": "exec", "parameters": EXEC_SCHEMA}]
ANTHROPIC = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSES = {"model": "m", "input": "hi"}
PNG = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}


def scorer(prompt_ids: list[int], output_ids: list[int]) -> list[float]:
    """Deterministic log-probs: -0.25, -0.5, ... (a real engine's are whatever the model says)."""
    return [-0.25 * (k + 1) for k in range(len(output_ids))]


def proxy(turns: list[Any], **kwargs: Any) -> Iterator[ThreadedProxyServer]:
    server = scripted_proxy(turns, **kwargs).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tools_proxy() -> Iterator[ThreadedProxyServer]:
    yield from proxy([TOOL_TURN], scorer=scorer)


def post(server: ThreadedProxyServer, rollout: str, route: str, body: Any) -> httpx.Response:
    sessions = server.server.deps.sessions
    if rollout not in sessions._by_rollout:
        sessions.open(rollout)
    token = sessions._by_rollout[rollout].token
    return httpx.post(f"{server.url}/r/{token}{route}", json=body, timeout=60)


def calls(server: ThreadedProxyServer, rollout: str) -> list[ModelCall]:
    return server.server.deps.sessions.calls(rollout)


def fmt(server: ThreadedProxyServer) -> Any:
    return server.server.deps.fmt


# -- context overflow --------------------------------------------------------------------------------


def test_context_overflow_is_each_apis_400_also_when_streaming() -> None:
    for server in proxy(["done"], max_context=30):
        long = "word " * 40
        n = post(
            server,
            "c",
            "/v1/messages/count_tokens",
            {**ANTHROPIC, "messages": [{"role": "user", "content": long}]},
        )
        tokens = n.json()["input_tokens"]
        advice = (
            "(the engine's context is 30 tokens; to fit, run Claude Code with `bare`, use a model with a "
            "longer context, or raise engine.context_length)"
        )
        for stream in (False, True):
            body = {**ANTHROPIC, "stream": stream, "messages": [{"role": "user", "content": long}]}
            r = post(server, "c", "/v1/messages", body)
            assert (r.status_code, r.headers["content-type"]) == (400, "application/json")
            assert r.json() == {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": f"prompt is too long: {tokens} tokens > 29 maximum {advice}",
                },
            }
        chat = {**CHAT, "stream": True, "messages": [{"role": "user", "content": long}]}
        r = post(server, "c", "/v1/chat/completions", chat)
        assert r.status_code == 400
        err = r.json()["error"]
        assert (err["type"], err["param"], err["code"]) == (
            "invalid_request_error",
            "messages",
            "context_length_exceeded",
        )
        assert err["message"].startswith(
            "This model's maximum context length is 29 tokens. However, your messages"
        )
        r = post(server, "c", "/v1/responses", {**RESPONSES, "input": long, "stream": True})
        assert (r.status_code, r.json()["error"]["param"], r.json()["error"]["code"]) == (
            400,
            "input",
            "context_length_exceeded",
        )
        # the SDK does not retry a 400: one failed record per request, each saying why
        client = anthropic.Anthropic(
            base_url=server.server.deps.sessions.open("sdk").base_url, api_key="k", max_retries=3
        )
        with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
            client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": long}])
        (sdk_call,) = calls(server, "sdk")
        assert (sdk_call.finish_reason, sdk_call.output_ids, sdk_call.tags) == (
            "error",
            [],
            ["context_overflow"],
        )
        assert (
            sdk_call.error == f"context_overflow: prompt is too long: {tokens} tokens > 29 maximum {advice}"
        )
        assert [c.tags for c in calls(server, "c")] == [
            ["context_overflow"],
            ["stream", "context_overflow"],
        ] + [["stream", "context_overflow"]] * 2
        r = post(server, "c", "/v1/messages", ANTHROPIC)  # a short prompt still works
        assert r.json()["content"] == [{"type": "text", "text": "done"}]


def test_output_cap_honours_the_request_up_to_context_and_ceiling() -> None:
    long_answer = "one two three four five six seven eight nine ten " * 10
    for server in proxy([long_answer], max_context=80):
        r = post(server, "cap", "/v1/messages", {**ANTHROPIC, "max_tokens": 32000})
        (call,) = calls(server, "cap")
        room = 80 - len(call.prompt_ids)
        assert len(call.output_ids) == room and r.json()["stop_reason"] == "max_tokens"
        assert call.notes == [f"max_tokens lowered from 32000 to {room} (context left after the prompt)"]
        assert call.tags == ["max_tokens_lowered"]
    for server in proxy([long_answer], sampling=SamplingConfig(max_tokens=30)):
        post(server, "ceil", "/v1/messages", {**ANTHROPIC, "max_tokens": 32000})
        post(server, "ceil", "/v1/messages", {**ANTHROPIC, "max_tokens": 7})
        post(server, "ceil", "/v1/chat/completions", CHAT)  # no cap asked: the ceiling
        a, b, c = calls(server, "ceil")
        assert [len(x.output_ids) for x in (a, b, c)] == [30, 7, 30]
        assert a.notes == ["max_tokens lowered from 32000 to 30 (engine.sampling.max_tokens)"]
        assert (b.notes, c.notes, c.tags) == ([], [], [])
    for server in proxy([long_answer]):  # no ceiling, no context: the request's cap as asked
        post(server, "free", "/v1/messages", {**ANTHROPIC, "max_tokens": 32000})
        (call,) = calls(server, "free")
        assert len(call.output_ids) == len(
            fmt(server).render_assistant(ChatMessage(role="assistant", content=long_answer))
        )
        assert call.notes == []


# -- tool calls ---------------------------------------------------------------------------------------


def test_tool_choice_none_drops_the_calls_in_all_three_apis(tools_proxy: ThreadedProxyServer) -> None:
    a = post(
        tools_proxy, "none", "/v1/messages", {**ANTHROPIC, "tools": A_TOOLS, "tool_choice": {"type": "none"}}
    )
    assert (a.json()["content"], a.json()["stop_reason"]) == ([{"type": "text", "text": ""}], "end_turn")
    c = post(tools_proxy, "none", "/v1/chat/completions", {**CHAT, "tools": C_TOOLS, "tool_choice": "none"})
    message = c.json()["choices"][0]
    assert (message["message"], message["finish_reason"]) == ({"role": "assistant", "content": ""}, "stop")
    r = post(tools_proxy, "none", "/v1/responses", {**RESPONSES, "tools": R_TOOLS, "tool_choice": "none"})
    assert [i["type"] for i in r.json()["output"]] == ["message"]
    sampled = fmt(tools_proxy).render_assistant(TOOL_TURN)
    for call in calls(tools_proxy, "none"):
        assert call.output_ids == sampled  # the sampled ids are kept whole for training
        assert (call.tool_calls, call.tags) == ([], ["tool_calls_dropped"])
        assert call.notes == ["dropped 1 tool call(s): tool_choice is none"]


def test_parallel_tool_calls_off_keeps_the_first_call() -> None:
    for server in proxy([TWO_CALLS]):
        choice = {"type": "auto", "disable_parallel_tool_use": True}
        a = post(server, "p", "/v1/messages", {**ANTHROPIC, "tools": A_TOOLS, "tool_choice": choice})
        assert [(b["name"], b["input"]) for b in a.json()["content"]] == [("exec", {"command": "ls"})]
        c = post(
            server, "p", "/v1/chat/completions", {**CHAT, "tools": C_TOOLS, "parallel_tool_calls": False}
        )
        wire = c.json()["choices"][0]["message"]["tool_calls"]
        assert [t["function"]["arguments"] for t in wire] == ['{"command":"ls"}']
        r = post(server, "p", "/v1/responses", {**RESPONSES, "tools": R_TOOLS, "parallel_tool_calls": False})
        assert [i["arguments"] for i in r.json()["output"]] == ['{"command":"ls"}']
        both = post(server, "p", "/v1/chat/completions", {**CHAT, "tools": C_TOOLS})
        assert len(both.json()["choices"][0]["message"]["tool_calls"]) == 2
        recorded = calls(server, "p")
        assert [c.notes for c in recorded[:3]] == [
            ["dropped 1 tool call(s) after the first: parallel tool calls are off"]
        ] * 3
        assert [len(c.tool_calls) for c in recorded] == [1, 1, 1, 2]


def test_a_call_of_an_unknown_tool_passes_through_tagged(tools_proxy: ThreadedProxyServer) -> None:
    other = [{"name": "read", "input_schema": EXEC_SCHEMA}]
    a = post(tools_proxy, "u", "/v1/messages", {**ANTHROPIC, "tools": other})
    (block,) = a.json()["content"]
    assert (block["type"], block["name"], block["input"]) == ("tool_use", "exec", {"command": "ls"})
    (call,) = calls(tools_proxy, "u")
    assert (call.tags, call.notes) == (["unknown_tool"], ["called tool(s) that were not offered: exec"])


# -- fields that work or get a 400 -----------------------------------------------------------------------


def test_chat_logprobs_are_the_sampled_ones(tools_proxy: ThreadedProxyServer) -> None:
    f = fmt(tools_proxy)
    ids = f.render_assistant(TOOL_TURN)
    expected = [
        {
            "token": f.tokenizer.decode([i]),
            "logprob": -0.25 * (k + 1),
            "bytes": list(f.tokenizer.decode([i]).encode()),
            "top_logprobs": [],
        }
        for k, i in enumerate(ids)
    ]
    body = {**CHAT, "tools": C_TOOLS, "logprobs": True, "top_logprobs": 0}
    r = post(tools_proxy, "lp", "/v1/chat/completions", body)
    assert r.json()["choices"][0]["logprobs"] == {"content": expected, "refusal": None}
    assert "".join(t["token"] for t in expected).startswith("<tool_call>")
    s = post(tools_proxy, "lp", "/v1/chat/completions", {**body, "stream": True})
    chunks = [json.loads(d) for _, d in parse_stream(s.content) if d != "[DONE]"]
    assert [c["choices"][0]["logprobs"] for c in chunks] == [None] * (len(chunks) - 1) + [
        {"content": expected, "refusal": None}
    ]
    plain = post(tools_proxy, "lp", "/v1/chat/completions", {**CHAT, "tools": C_TOOLS})
    assert plain.json()["choices"][0]["logprobs"] is None


UNSUPPORTED = [
    ("/v1/chat/completions", {**CHAT, "logprobs": True, "top_logprobs": 2}, "top_logprobs"),
    ("/v1/responses", {**RESPONSES, "top_logprobs": 3}, "top_logprobs"),
    ("/v1/responses", {**RESPONSES, "conversation": "conv_1"}, "conversation"),
    ("/v1/responses", {**RESPONSES, "background": True}, "background"),
]


@pytest.mark.parametrize(("route", "body", "param"), UNSUPPORTED)
def test_unsupported_fields_are_400_naming_them(
    tools_proxy: ThreadedProxyServer, route: str, body: Any, param: str
) -> None:
    r = post(tools_proxy, "bad", route, body)
    assert r.status_code == 400
    assert (r.json()["error"]["param"], r.json()["error"]["code"]) == (param, None)
    assert r.json()["error"]["message"].startswith(param)


def test_tool_result_is_error_is_rendered(tools_proxy: ThreadedProxyServer) -> None:
    def result(is_error: bool) -> dict[str, Any]:
        block = {"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": is_error}
        history = [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "exec", "input": {"command": "ls"}}],
            },
            {"role": "user", "content": [block]},
        ]
        return {**ANTHROPIC, "tools": A_TOOLS, "messages": history}

    post(tools_proxy, "err", "/v1/messages", result(True))
    post(tools_proxy, "err", "/v1/messages", result(False))
    failed, fine = (fmt(tools_proxy).tokenizer.decode(c.prompt_ids) for c in calls(tools_proxy, "err"))
    assert "<tool_response>\nError: boom\n</tool_response>" in failed
    assert "<tool_response>\nboom\n</tool_response>" in fine


# -- images for a text-only policy ---------------------------------------------------------------------


IMAGES = [
    (
        "/v1/messages",
        {
            **ANTHROPIC,
            "tools": A_TOOLS,
            "messages": [
                {"role": "user", "content": "look"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "exec", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": [{"type": "image", "source": PNG}],
                        }
                    ],
                },
            ],
        },
    ),
    (
        "/v1/chat/completions",
        {
            **CHAT,
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "look"},
                        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
                    ],
                }
            ],
        },
    ),
    (
        "/v1/responses",
        {
            **RESPONSES,
            "tools": R_TOOLS,
            "input": [
                {"type": "message", "role": "user", "content": "look"},
                {"type": "function_call", "call_id": "c1", "name": "exec", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": [{"type": "input_image", "image_url": "data:image/png;base64,AA"}],
                },
            ],
        },
    ),
    (
        "/v1beta/models/m:generateContent",
        {
            "contents": [
                {
                    "role": "user",
                    "parts": [
                        {"text": "look"},
                        {"inline_data": {"mime_type": "image/png", "data": "iVBORw0KGgo="}},  # snake_case
                    ],
                }
            ]
        },
    ),
]


@pytest.mark.parametrize(("route", "body"), IMAGES, ids=[r for r, _ in IMAGES])
def test_images_become_a_placeholder_or_a_400(route: str, body: Any) -> None:
    for server in proxy(["done"]):
        r = post(server, "img", route, body)
        assert r.status_code == 200, r.text
        (call,) = calls(server, "img")
        assert (call.replaced_images, call.tags, call.notes) == (
            1,
            ["images_replaced"],
            ["replaced 1 image part(s) with a text placeholder"],
        )
        assert IMAGE_PLACEHOLDER in fmt(server).tokenizer.decode(call.prompt_ids)
    for server in proxy(["done"], config=ProxyConfig(images="reject")):
        r = post(server, "img", route, body)
        assert r.status_code == 400
        endpoint = resolve(route)
        assert endpoint is not None
        message = "the request holds 1 image part(s); this policy reads text only (proxy.images = reject)"
        assert r.json() == endpoint.dialect.error_json(400, message)  # in the API's own shape


COUNTED: list[tuple[str, dict[str, Any], int]] = [
    ("anthropic", IMAGES[0][1], 1),
    ("openai_chat", IMAGES[1][1], 1),
    ("openai_responses", IMAGES[2][1], 1),
    ("gemini", IMAGES[3][1], 1),
    (
        "gemini",
        {
            "contents": [
                {"parts": [{"fileData": {"mimeType": "IMAGE/JPEG", "fileUri": "x"}}, {"text": "a"}]},
                {"role": "model", "parts": [{"text": "b"}]},
                {"parts": [{"inlineData": {"mimeType": "image/gif", "data": ""}}]},
                {"parts": [{"inlineData": {"mimeType": "audio/wav", "data": ""}}]},  # not an image
            ]
        },
        2,
    ),
    ("anthropic", {"messages": [{"role": "user", "content": [{"type": "im\u0061ge"}]}]}, 1),  # escaped
    ("openai_chat", {"messages": [{"role": "user", "content": [{"type": "image"}]}]}, 0),  # not Chat's
    ("gemini", {"contents": [{"parts": [{"text": "image/png"}]}]}, 0),
]


@pytest.mark.parametrize(("name", "body", "n"), COUNTED)
def test_each_dialect_counts_its_own_image_parts(name: str, body: dict[str, Any], n: int) -> None:
    """`Dialect.count_images` on the body's bytes as a client sends them (escapes and all)."""
    raw = json.dumps(body).encode().replace(b"\\\\u0061", b"\\u0061")
    decoded = json.loads(raw)
    assert DIALECTS[name].count_images(raw, decoded) == n


# -- Codex's namespace tools -----------------------------------------------------------------------------


NAMESPACE = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Sub-agents.",
    "tools": [{"type": "function", "name": "spawn_agent", "description": "spawn", "parameters": EXEC_SCHEMA}],
}


def test_namespace_tools_are_offered_and_called_in_the_responses_shape() -> None:
    spawn = ChatMessage(
        role="assistant", tool_calls=[ToolCall(name="multi_agent_v1.spawn_agent", arguments={"command": "x"})]
    )
    for server in proxy([spawn, "done"]):
        body = {**RESPONSES, "tools": [*R_TOOLS, NAMESPACE]}
        r = post(server, "ns", "/v1/responses", body)
        (item,) = r.json()["output"]
        assert {k: item[k] for k in ("type", "name", "namespace", "arguments")} == {
            "type": "function_call",
            "name": "spawn_agent",
            "namespace": "multi_agent_v1",
            "arguments": '{"command":"x"}',
        }
        s = post(server, "ns", "/v1/responses", {**body, "stream": True})
        assert grammar.check_responses(s.content)["output"][0]["namespace"] == "multi_agent_v1"
        first = calls(server, "ns")[0]
        assert "multi_agent_v1.spawn_agent" in fmt(server).tokenizer.decode(first.prompt_ids)
        back = [
            {"type": "message", "role": "user", "content": "hi"},
            {k: item[k] for k in ("type", "call_id", "name", "namespace", "arguments")},
            {"type": "function_call_output", "call_id": item["call_id"], "output": "spawned"},
        ]
        r = post(server, "ns", "/v1/responses", {**body, "input": back})
        assert r.json()["output"][0]["content"][0]["text"] == "done"
        first, second, third = calls(server, "ns")
        assert third.render == "spliced" and third.spliced_from in (first.call_id, second.call_id)
