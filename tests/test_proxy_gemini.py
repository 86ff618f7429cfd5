"""The Gemini API dialect: the official `google-genai` SDK against a live proxy (streaming and not, a
function call round trip spliced, count_tokens, errors), exact wire JSON and streams, keep-alives, the
400s that name a field, context overflow in Google's shape, and what Gemini CLI sends."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors, types
from sdk_script import ARGS, SCHEMA, scripted_server

from harnessrl.proxy import grammar
from harnessrl.proxy.canonical import Completion
from harnessrl.proxy.dialects import owner, resolve
from harnessrl.proxy.dialects.gemini import GeminiDialect
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.testing import scripted_proxy
from harnessrl.types import ChatMessage, ToolCall, ToolSpec

DECL: dict[str, Any] = {
    "name": "exec",
    "description": "Run a command.",
    "parameters": {"type": "OBJECT", "properties": {"command": {"type": "STRING"}}, "required": ["command"]},
}
HEX24 = re.compile(r"[0-9a-f]{24}")


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedProxyServer]:
    yield from scripted_server()


def sdk(base_url: str) -> genai.Client:
    options = types.HttpOptions(base_url=base_url, retry_options=types.HttpRetryOptions(attempts=1))
    return genai.Client(api_key="unused", http_options=options)


def config(**kw: Any) -> types.GenerateContentConfig:
    return types.GenerateContentConfig(
        system_instruction="Be terse.",
        tools=[types.Tool(function_declarations=[types.FunctionDeclaration(**DECL)])],
        **kw,
    )


@pytest.mark.parametrize("stream", [False, True])
def test_sdk_function_call_round_trip_is_spliced(server: ThreadedProxyServer, stream: bool) -> None:
    info = server.open_session("gemini")
    client = sdk(info.base_url)
    cfg = config(thinking_config=types.ThinkingConfig(include_thoughts=True, thinking_budget=8192))
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="list files")])]
    if stream:
        chunks = list(client.models.generate_content_stream(model="gemini-x", contents=contents, config=cfg))
        assert len(chunks) == 1
        first = chunks[0]
    else:
        first = client.models.generate_content(model="gemini-x", contents=contents, config=cfg)
    assert first.candidates is not None and first.candidates[0].content is not None
    content = first.candidates[0].content
    assert content.role == "model" and content.parts is not None
    thought, call_part = content.parts
    assert (thought.text, thought.thought) == ("I should list files.", True)
    assert call_part.function_call is not None
    call = call_part.function_call
    assert (call.name, call.args) == ("exec", ARGS)
    assert call.id is not None and call.id.startswith("call_")
    assert first.candidates[0].finish_reason == types.FinishReason.STOP
    contents.append(content)  # the SDK's own content back, thought part included
    contents.append(
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(name="exec", response={"output": "a b c"})
                )
            ],
        )
    )
    second = client.models.generate_content(model="gemini-x", contents=contents, config=cfg)
    assert second.text == "There are 3 files."
    calls = server.calls(info.rollout_id)
    one, two = calls
    assert (one.render, two.render, two.spliced_from, two.dialect) == (
        "rendered",
        "spliced",
        one.call_id,
        "gemini",
    )
    assert two.prompt_ids[: len(one.prompt_ids) + len(one.output_ids)] == one.prompt_ids + one.output_ids
    assert second.usage_metadata is not None
    assert second.usage_metadata.prompt_token_count == len(two.prompt_ids)
    assert second.usage_metadata.candidates_token_count == len(two.output_ids)
    assert (one.requested_model, one.tool_calls[0].id) == ("gemini-x", call.id)
    count = client.models.count_tokens(model="gemini-x", contents=contents)
    fmt = server.server.deps.fmt
    canonical = GeminiDialect().parse(
        {"contents": [c.model_dump(mode="json", exclude_none=True) for c in contents]}
    )
    assert count.total_tokens == fmt.count_tokens(canonical.messages, [])


def test_sdk_chat_session_streams_and_splices(server: ThreadedProxyServer) -> None:
    """The SDK's chat object keeps the history itself (thought parts and all) and sends it back."""
    info = server.open_session("gemini")
    client = sdk(info.base_url)  # kept: the SDK closes its HTTP client when the Client is collected
    chat = client.chats.create(model="gemini-x", config=config())
    first = list(chat.send_message_stream("list files"))
    assert first[-1].function_calls is not None and first[-1].function_calls[0].args == ARGS
    assert [p.thought for p in first[-1].candidates[0].content.parts] == [None]  # type: ignore[index, union-attr]
    reply = types.Part(function_response=types.FunctionResponse(name="exec", response={"output": "a b c"}))
    second = "".join(c.text or "" for c in chat.send_message_stream(reply))
    assert second == "There are 3 files."
    one, two = server.calls(info.rollout_id)
    assert (two.render, two.spliced_from) == ("spliced", one.call_id)


def test_sdk_sees_api_errors(server: ThreadedProxyServer) -> None:
    info = server.open_session("gemini")
    client = sdk(info.base_url)
    cfg = types.GenerateContentConfig(candidate_count=2)
    with pytest.raises(errors.ClientError) as e:
        client.models.generate_content(model="m", contents="hi", config=cfg)
    assert (e.value.code, e.value.status) == (400, "INVALID_ARGUMENT")
    assert e.value.message == "generationConfig.candidateCount must be 1: one candidate per request"
    bad = sdk(server.server.url)  # no session token in the path, and an unknown API key
    with pytest.raises(errors.ClientError) as e:
        bad.models.generate_content(model="m", contents="hi")
    assert (e.value.code, e.value.status) == (401, "UNAUTHENTICATED")


def test_sdk_reads_a_slow_stream_with_keepalives() -> None:
    s = scripted_proxy(["done"], delay_s=0.35).start()
    try:
        s.server.deps.config.keepalive_s = 0.1
        info = s.server.deps.sessions.open("slow")
        client = sdk(info.base_url)
        chunks = list(client.models.generate_content_stream(model="m", contents="hi"))
        assert [c.text for c in chunks] == ["done"]  # keep-alives never reach the SDK's user
        body = {"contents": [{"parts": [{"text": "hi"}]}]}
        url = f"{info.base_url}/v1beta/models/m:streamGenerateContent"
        raw = httpx.post(url, json=body, timeout=30).content  # no alt=sse: a JSON array
        assert raw.startswith(b"[\n") and grammar.check_gemini(raw)["parts"] == [{"text": "done"}]
        again = {"contents": [{"parts": [{"text": "hi again"}]}]}  # the same body would be a replayed retry
        sse_raw = httpx.post(url + "?alt=sse", json=again, timeout=30).content
        assert sse_raw.startswith(b"\n\n") and sse_raw.count(b"data: ") == 1  # blank-line keep-alives
        assert grammar.check_gemini(sse_raw)["finishReason"] == "STOP"
    finally:
        s.stop()


def test_engine_error_after_the_stream_started_ends_it_in_googles_shape() -> None:
    s = scripted_proxy(["done"], fault_calls={0, 1}, delay_s=0.3).start()
    try:
        s.server.deps.config.keepalive_s = 0.1
        info = s.server.deps.sessions.open("fault")
        body = {"contents": [{"parts": [{"text": "hi"}]}]}
        url = f"{info.base_url}/v1beta/models/m:streamGenerateContent"
        r = httpx.post(url, json=body, timeout=30)
        assert r.status_code == 200 and r.content.startswith(b"[\n")
        error = json.loads(r.content)[-1]["error"]
        assert (error["code"], error["status"]) == (500, "INTERNAL")
        assert error["message"].startswith("engine error: ")
        client = sdk(info.base_url)
        with pytest.raises(errors.ServerError) as e:
            list(client.models.generate_content_stream(model="m", contents="hi again"))
        assert (e.value.code, e.value.status) == (500, "INTERNAL")
        assert [c.error is not None for c in s.calls("fault")] == [True, True]
    finally:
        s.stop()


def _completion(**kw: Any) -> Completion:
    base: dict[str, Any] = dict(
        response_id="r1",
        model="gemini-x",
        text="",
        reasoning=None,
        tool_calls=[],
        finish_reason="stop",
        prompt_tokens=7,
        output_tokens=3,
        created=0,
    )
    return Completion(**(base | kw))


def test_wire_json_and_streams_exact() -> None:
    d = GeminiDialect("gemini-x", stream=True)
    req = d.parse({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
    tc = ToolCall(id="call_1", name="exec", arguments=ARGS)
    c = _completion(text="ok", reasoning="hmm", tool_calls=[tc], finish_reason="length")
    expected = {
        "candidates": [
            {
                "content": {
                    "parts": [
                        {"text": "ok"},
                        {"functionCall": {"id": "call_1", "name": "exec", "args": ARGS}},
                    ],
                    "role": "model",
                },
                "finishReason": "MAX_TOKENS",
                "index": 0,
            }
        ],
        "usageMetadata": {"promptTokenCount": 7, "candidatesTokenCount": 3, "totalTokenCount": 10},
        "modelVersion": "gemini-x",
        "responseId": "r1",
    }
    assert d.response_json(req, c) == expected
    assert b"".join(d.stream_head(req, "r1", 7) + d.stream_events(req, c)) == (
        b"data: " + json.dumps(expected, separators=(",", ":")).encode() + b"\n\n"
    )
    array = GeminiDialect("gemini-x", stream=True, sse=False)
    assert json.loads(b"".join(array.stream_head(req, "r1", 7) + array.stream_events(req, c))) == [expected]
    assert json.loads(
        b"".join(array.stream_head(req, "r1", 7) + array.stream_error(req, "r1", 500, "boom"))
    ) == [{"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}]
    thoughts = d.parse(
        {
            "contents": [{"parts": [{"text": "hi"}]}],
            "generationConfig": {"thinkingConfig": {"includeThoughts": True}, "responseLogprobs": True},
        }
    )
    c2 = _completion(text="ok", reasoning="hmm", logprobs=[("o", -0.5), ("k", -1.5)])
    candidate = d.response_json(thoughts, c2)["candidates"][0]
    assert candidate["content"]["parts"] == [{"text": "hmm", "thought": True}, {"text": "ok"}]
    assert candidate["avgLogprobs"] == -1.0
    assert candidate["logprobsResult"] == {
        "topCandidates": [],
        "chosenCandidates": [{"token": "o", "logProbability": -0.5}, {"token": "k", "logProbability": -1.5}],
    }


def test_live_wire_json_exact(server: ThreadedProxyServer) -> None:
    info = server.open_session("gemini")
    body = {
        "contents": [{"role": "user", "parts": [{"text": "list files"}]}],
        "tools": [{"functionDeclarations": [DECL]}],
    }
    r = httpx.post(
        f"{server.server.url}/v1beta/models/gemini-x:generateContent?key={info.token}", json=body, timeout=30
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    out = r.json()
    call_id = out["candidates"][0]["content"]["parts"][0]["functionCall"]["id"]
    (call,) = server.calls(info.rollout_id)
    assert re.fullmatch(r"call_[0-9a-f]{24}", call_id) and HEX24.fullmatch(out["responseId"])
    assert out == {
        "candidates": [
            {
                "content": {
                    "parts": [{"functionCall": {"id": call_id, "name": "exec", "args": ARGS}}],
                    "role": "model",
                },
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": len(call.prompt_ids),
            "candidatesTokenCount": len(call.output_ids),
            "totalTokenCount": len(call.prompt_ids) + len(call.output_ids),
        },
        "modelVersion": "gemini-x",
        "responseId": out["responseId"],
    }
    headers = {"x-goog-api-key": info.token}
    url = f"{server.server.url}/v1/models/gemini-x:countTokens"
    n = httpx.post(url, json={"generateContentRequest": body}, headers=headers, timeout=30).json()
    assert n == {"totalTokens": len(call.prompt_ids)}


BAD: list[tuple[dict[str, Any], str]] = [
    (
        {"contents": [{"parts": [{"inlineData": {"mimeType": "audio/wav", "data": ""}}]}]},
        "contents[0].parts[0].inlineData",
    ),
    (
        {"contents": [{"role": "model", "parts": [{"inlineData": {"mimeType": "image/png", "data": ""}}]}]},
        "contents[0].parts[0].inlineData",
    ),
    ({"contents": [{"parts": [{}]}]}, "contents[0].parts[0]"),  # a part with no data: Google's 400 too
    ({"contents": [{"parts": [{"thoughtSignature": "s"}]}]}, "contents[0].parts[0]"),
    ({"contents": [{"role": "model", "parts": [{"thought": True}]}]}, "contents[0].parts[0]"),
    ({"contents": [{"parts": [{"file_data": {"fileUri": "x"}}]}]}, "contents[0].parts[0].fileData"),
    (
        {"contents": [{"role": "model", "parts": [{"executableCode": {"code": "1"}}]}]},
        "contents[0].parts[0].executableCode",
    ),
    (
        {"contents": [{"parts": [{"codeExecutionResult": {"output": "1"}}]}]},
        "contents[0].parts[0].codeExecutionResult",
    ),
    ({"contents": [{"role": "system", "parts": [{"text": "x"}]}]}, "contents[0].role"),
    (
        {"contents": [{"parts": [{"functionResponse": {"name": "exec", "response": {}}}]}]},
        "contents[0].parts[0].functionResponse",
    ),
    (
        {"contents": [{"parts": [{"text": "x"}]}], "generationConfig": {"stopSequences": ["x"]}},
        "generationConfig.stopSequences",
    ),
    (
        {
            "contents": [{"parts": [{"text": "x"}]}],
            "generationConfig": {"responseMimeType": "application/json"},
        },
        "generationConfig.responseMimeType",
    ),
    (
        {
            "contents": [{"parts": [{"text": "x"}]}],
            "generationConfig": {"thinkingConfig": {"thinkingBudget": -2}},
        },
        "generationConfig.thinkingConfig.thinkingBudget",
    ),
    (
        {"contents": [{"parts": [{"text": "x"}]}], "toolConfig": {"functionCallingConfig": {"mode": "ANY"}}},
        "toolConfig.functionCallingConfig.mode",
    ),
    ({"contents": [{"parts": [{"text": "x"}]}], "tools": [{"computerUse": {}}]}, "tools[0].computerUse"),
    ({"contents": [{"parts": [{"text": "x"}]}], "cachedContent": "cachedContents/1"}, "cachedContent"),
]


@pytest.mark.parametrize(("body", "field"), BAD, ids=[f for _, f in BAD])
def test_unsupported_fields_are_a_400_naming_the_field(
    server: ThreadedProxyServer, body: dict[str, Any], field: str
) -> None:
    url = f"{server.open_session('gemini').base_url}/v1beta/models/m:generateContent"
    r = httpx.post(url, json=body, timeout=30)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert error["message"].startswith(field) or field == "contents[0].parts[0].functionResponse"
    assert error["details"][0]["fieldViolations"][0]["field"] == field


def test_context_overflow_is_googles_400_before_any_stream() -> None:
    s = scripted_proxy(["done"], max_context=64).start()
    try:
        info = s.server.deps.sessions.open("long")
        body = {"contents": [{"parts": [{"text": "word " * 200}]}]}
        r = httpx.post(
            f"{info.base_url}/v1beta/models/m:streamGenerateContent?alt=sse", json=body, timeout=30
        )
        assert r.status_code == 400 and r.headers["content-type"] == "application/json"
        error = r.json()["error"]
        (call,) = s.server.deps.sessions.calls("long")
        n = int(re.search(r"\((\d+)\)", error["message"]).group(1))  # type: ignore[union-attr]
        assert error["message"].startswith(
            f"The input token count ({n}) exceeds the maximum number of tokens allowed (63)."
        )
        assert (error["status"], error["details"][0]["fieldViolations"][0]["field"]) == (
            "INVALID_ARGUMENT",
            "contents",
        )
        assert call.tags == ["stream", "context_overflow"]
    finally:
        s.stop()


def test_what_gemini_cli_sends_parses() -> None:
    """Shapes read from @google/gemini-cli's geminiChat.ts: synthetic thoughtSignature on the first call
    of a turn, a function response and the next prompt coalesced into one user turn, ids with the name
    stripped off, thinking budgets, safety settings, toolConfig AUTO, snake_case keys from curl users."""
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "<session_context>"}, {"text": "list files"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Listing"},
                    {"text": " now."},
                    {
                        "functionCall": {"id": "abc", "name": "run_shell_command", "args": ARGS},
                        "thoughtSignature": "skip_thought_signature_validator",
                    },
                    {"function_call": {"name": "read_file", "args": {"path": "a"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "abc",
                            "name": "run_shell_command",
                            "response": {"output": "a b c"},
                        }
                    },
                    {"functionResponse": {"name": "read_file", "response": {"error": "no such file"}}},
                    {"text": "and now?"},
                ],
            },
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "tools": [
            {"functionDeclarations": [{"name": "run_shell_command", "parametersJsonSchema": SCHEMA}]},
            {"googleSearch": {}},
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "generation_config": {
            "temperature": 1,
            "topP": 0.95,
            "topK": 64,
            "thinkingConfig": {"includeThoughts": True, "thinkingBudget": 8192},
        },
    }
    req = GeminiDialect("gemini-2.5-pro", stream=True).parse(body)
    assert req.messages == [
        ChatMessage(role="system", content="You are Gemini CLI."),
        ChatMessage(role="user", content="<session_context>\nlist files"),
        ChatMessage(
            role="assistant",
            content="Listing now.",
            tool_calls=[
                ToolCall(id="abc", name="run_shell_command", arguments=ARGS),
                ToolCall(id="read_file#1.1", name="read_file", arguments={"path": "a"}),
            ],
        ),
        ChatMessage(role="tool", content="a b c", tool_call_id="abc", name="run_shell_command"),
        ChatMessage(
            role="tool", content="Error: no such file", tool_call_id="read_file#1.1", name="read_file"
        ),
        ChatMessage(role="user", content="and now?"),
    ]
    assert req.tools == [ToolSpec(name="run_shell_command", description="", parameters=SCHEMA)]
    assert (req.model, req.stream, req.options) == ("gemini-2.5-pro", True, {"include_thoughts": True})
    assert GeminiDialect().parse(
        {"contents": [{"parts": [{"text": "x"}]}], "tools": [{"functionDeclarations": [DECL]}]}
    ).tools == [ToolSpec(name="exec", description="Run a command.", parameters=SCHEMA)]


def test_routes() -> None:
    route = resolve("/v1beta/models/gemini-2.5-pro:streamGenerateContent", b"alt=sse&key=k1")
    assert route is not None and isinstance(route.dialect, GeminiDialect)
    assert (route.dialect.model, route.dialect.stream, route.dialect.sse) == ("gemini-2.5-pro", True, True)
    assert (route.count_tokens, route.api_key) == (None, "k1")
    array = resolve("/v1/models/m:streamGenerateContent")
    assert array is not None and isinstance(array.dialect, GeminiDialect)
    assert (array.dialect.sse, array.dialect.stream_media_type) == (False, "application/json")
    count = resolve("/v1beta/models/m:countTokens")
    assert (
        count is not None and count.count_tokens is not None and count.count_tokens(5) == {"totalTokens": 5}
    )
    for path in [
        "/v1beta/models/m:embedContent",
        "/v1/models/m:batchEmbedContents",
        "/v1beta/tunedModels/m:generateContent",
        "/v1beta/models/:generateContent",
        "/v1beta/models/a/b",
    ]:
        assert resolve(path) is None, path
        assert owner(path).name == "gemini", path  # a 404 in Google's shape
    lookup = resolve("/v1beta/models/m")  # Google's own path: Google's shape, whoever asks
    assert lookup is not None and (lookup.dialect.name, lookup.model, lookup.methods) == (
        "gemini",
        "m",
        ("GET", "HEAD"),
    )
    listed = resolve("/v1/models", b"", {"x-goog-api-key": "k"})  # shared: the client's API answers
    assert listed is not None and (listed.dialect.name, listed.model) == ("gemini", "")
    fine_tuned = resolve("/v1/models/ft:gpt-4o:org::abc", b"", {"authorization": "Bearer k"})
    assert fine_tuned is not None and (fine_tuned.dialect.name, fine_tuned.model) == (
        "openai_chat",
        "ft:gpt-4o:org::abc",
    )


@pytest.mark.harness
def test_real_gemini_cli_calls_splice(tmp_path: Path) -> None:
    """The unmodified Gemini CLI, with its own default generation config (a thinking budget, thoughts
    included), against a live proxy whose turns are slow enough for keep-alives: two tool calls and an
    answer, each call spliced onto the one before."""
    from harnessrl.harnesses import get_harness

    install = get_harness("gemini-cli").ensure_installed()
    turns = [
        ChatMessage(
            role="assistant",
            reasoning="Write it.",
            tool_calls=[ToolCall(name="run_shell_command", arguments={"command": "printf hi > hello.txt"})],
        ),
        ChatMessage(
            role="assistant",
            tool_calls=[ToolCall(name="run_shell_command", arguments={"command": "cat hello.txt"})],
        ),
        ChatMessage(role="assistant", reasoning="It holds hi.", content="Done: hello.txt holds hi."),
    ]
    s = scripted_proxy(turns, enable_thinking=True, delay_s=0.3).start()
    try:
        s.server.deps.config.keepalive_s = 0.1
        info = s.server.deps.sessions.open("gemini-cli")
        home, workspace = tmp_path / "home", tmp_path / "ws"
        (home / ".gemini").mkdir(parents=True)
        workspace.mkdir()
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "model": {"disableLoopDetection": True, "skipNextSpeakerCheck": True},
        }
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "GEMINI_API_KEY": info.token,
            "GOOGLE_GEMINI_BASE_URL": info.base_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
            "NO_COLOR": "1",
        }
        argv = [str(install / "node_modules" / ".bin" / "gemini"), "-p", "create hello.txt containing hi"]
        argv += ["--output-format", "stream-json", "--yolo", "--model", "gemini-2.5-pro"]
        done = subprocess.run(argv, env=env, cwd=workspace, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        assert events[-1]["type"] == "result" and events[-1]["status"] == "success"
        assert (workspace / "hello.txt").read_text() == "hi"
        calls = s.calls("gemini-cli")
        assert [(c.render, c.error) for c in calls] == [
            ("rendered", None),
            ("spliced", None),
            ("spliced", None),
        ]
        assert [c.spliced_from for c in calls[1:]] == [calls[0].call_id, calls[1].call_id]
        assert calls[-1].text == "Done: hello.txt holds hi."
    finally:
        s.stop()
