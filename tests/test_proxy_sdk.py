"""The official `anthropic` and `openai` SDKs as clients of the live proxy, streaming and not, with tool
calls and reasoning; each second turn sends the SDK's own history back and must be spliced."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from sdk_script import ARGS, SCHEMA, scripted_server

from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.sessions import SessionInfo
from harnessrl.proxy.testing import scripted_proxy
from harnessrl.types import ModelCall


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedProxyServer]:
    yield from scripted_server()


def openai_session(server: ThreadedProxyServer) -> tuple[SessionInfo, openai.OpenAI]:
    """A new session "sdk" and the official OpenAI client pointed at it."""
    info = server.open_session("sdk")
    return info, openai.OpenAI(base_url=info.openai_base_url, api_key="unused", max_retries=0)


def assert_spliced(calls: list[ModelCall]) -> None:
    first, second = calls
    assert (first.render, second.render, second.spliced_from) == ("rendered", "spliced", first.call_id)
    prefix = first.prompt_ids + first.output_ids
    assert second.prompt_ids[: len(prefix)] == prefix


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_sdk_tool_call_then_answer(server: ThreadedProxyServer, stream: bool) -> None:
    info = server.open_session("sdk")
    client = anthropic.Anthropic(base_url=info.base_url, api_key="unused", max_retries=0)
    tools: Any = [{"name": "exec", "description": "Run a command.", "input_schema": SCHEMA}]
    messages: list[Any] = [{"role": "user", "content": "list files"}]
    kwargs: dict[str, Any] = {"model": "claude-x", "max_tokens": 200, "tools": tools, "system": "Be terse."}
    if stream:
        with client.messages.stream(messages=messages, **kwargs) as s:
            first = s.get_final_message()
    else:
        first = client.messages.create(messages=messages, **kwargs)
    assert first.stop_reason == "tool_use"
    assert [b.type for b in first.content] == ["thinking", "tool_use"]
    thinking, tool_use = first.content
    assert thinking.type == "thinking" and thinking.thinking == "I should list files."
    assert tool_use.type == "tool_use" and (tool_use.name, tool_use.input) == ("exec", ARGS)
    assert tool_use.id.startswith("toolu_")
    messages += [
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "a b c"}],
        },
    ]
    second = client.messages.create(messages=messages, **kwargs)
    assert second.stop_reason == "end_turn"
    assert [(b.type, getattr(b, "text", None)) for b in second.content] == [
        ("thinking", None),
        ("text", "There are 3 files."),
    ]
    calls = server.calls(info.rollout_id)
    assert_spliced(calls)
    assert second.usage.input_tokens == len(calls[1].prompt_ids)
    assert second.usage.output_tokens == len(calls[1].output_ids)
    count = client.messages.count_tokens(model="claude-x", messages=messages, tools=tools, system="Be terse.")
    assert count.input_tokens > len(calls[0].prompt_ids)


@pytest.mark.parametrize("stream", [False, True])
def test_openai_chat_sdk_tool_call_then_answer(server: ThreadedProxyServer, stream: bool) -> None:
    info, client = openai_session(server)
    tools: Any = [
        {
            "type": "function",
            "function": {"name": "exec", "description": "Run a command.", "parameters": SCHEMA},
        }
    ]
    messages: list[Any] = [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "list files"},
    ]
    if stream:
        chunks = list(
            client.chat.completions.create(
                model="gpt-x",
                messages=messages,
                tools=tools,
                stream=True,
                stream_options={"include_usage": True},
            )
        )
        assert chunks[-1].usage is not None and chunks[-1].choices == []
        calls_delta = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
        call_id = calls_delta[0].id
        name = calls_delta[0].function.name  # type: ignore[union-attr]
        args = json.loads("".join(tc.function.arguments or "" for tc in calls_delta))  # type: ignore[union-attr]
        finish = [c.choices[0].finish_reason for c in chunks if c.choices][-1]
    else:
        reply = client.chat.completions.create(model="gpt-x", messages=messages, tools=tools)
        tool_call = reply.choices[0].message.tool_calls[0]  # type: ignore[index]
        call_id, name = tool_call.id, tool_call.function.name  # type: ignore[union-attr]
        args = json.loads(tool_call.function.arguments)  # type: ignore[union-attr]
        finish = reply.choices[0].finish_reason
        assert reply.choices[0].message.model_extra == {"reasoning_content": "I should list files."}
    assert (name, args, finish) == ("exec", ARGS, "tool_calls")
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        ]},
        {"role": "tool", "tool_call_id": call_id, "content": "a b c"},
    ]  # fmt: skip
    second = client.chat.completions.create(model="gpt-x", messages=messages, tools=tools)
    assert second.choices[0].message.content == "There are 3 files."
    assert second.choices[0].finish_reason == "stop"
    assert_spliced(server.calls(info.rollout_id))
    assert [m.id for m in client.models.list()] == ["harnessrl"]


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_sdk_tool_call_then_answer(server: ThreadedProxyServer, stream: bool) -> None:
    info, client = openai_session(server)
    tools: Any = [
        {
            "type": "function",
            "name": "exec",
            "description": "Run a command.",
            "parameters": SCHEMA,
            "strict": False,
        }
    ]
    inputs: list[Any] = [{"role": "user", "content": "list files"}]
    kwargs: dict[str, Any] = {"model": "gpt-x", "tools": tools, "instructions": "Be terse."}
    if stream:
        with client.responses.stream(input=inputs, **kwargs) as s:
            first = s.get_final_response()
    else:
        first = client.responses.create(input=inputs, **kwargs)
    assert [item.type for item in first.output] == ["reasoning", "function_call"]
    reasoning, call = first.output
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == "I should list files."
    assert call.type == "function_call" and (call.name, json.loads(call.arguments)) == ("exec", ARGS)
    inputs += [item.model_dump(exclude_none=True) for item in first.output]
    inputs.append({"type": "function_call_output", "call_id": call.call_id, "output": "a b c"})
    second = client.responses.create(input=inputs, **kwargs)
    assert second.output_text == "There are 3 files."
    assert second.status == "completed"
    assert_spliced(server.calls(info.rollout_id))


def test_sdk_sees_engine_errors_as_api_errors() -> None:
    server = scripted_proxy(["done"], fault_calls={0, 1}).start()
    try:
        info = server.server.deps.sessions.open("err")
        client = anthropic.Anthropic(base_url=info.base_url, api_key="unused", max_retries=0)
        with pytest.raises(anthropic.InternalServerError):
            client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
        oai = openai.OpenAI(base_url=info.openai_base_url, api_key="unused", max_retries=0)
        with pytest.raises(openai.APIError):
            list(
                oai.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}], stream=True
                )
            )
        reply = oai.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert reply.choices[0].message.content == "done"
    finally:
        server.stop()
