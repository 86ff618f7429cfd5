"""Dialects without a server: fixture requests -> exact canonical messages; completions -> exact wire
JSON and events; the grammar checkers reject broken streams; capture heuristics; session store rules."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from harnessrl.proxy import capture, grammar, sse
from harnessrl.proxy.canonical import CanonicalRequest, Completion
from harnessrl.proxy.dialects import (
    DIALECTS,
    AnthropicDialect,
    Dialect,
    OpenAIChatDialect,
    OpenAIResponsesDialect,
    resolve,
)
from harnessrl.proxy.sessions import SessionStore
from harnessrl.types import ChatMessage, ToolCall

A, C, R = AnthropicDialect(), OpenAIChatDialect(), OpenAIResponsesDialect()


def fixture(shared: Path, folder: str, n: int) -> dict[str, Any]:
    path = next((shared / "harness-traffic" / folder).glob(f"000{n}_*.json"))
    body: dict[str, Any] = json.loads(path.read_text())["body"]
    return body


def test_claude_code_call_2_parses_and_normalises_like_call_1(shared_fixtures: Path) -> None:
    first = A.parse(fixture(shared_fixtures, "claude-code", 1))
    second = A.parse(fixture(shared_fixtures, "claude-code", 2))
    args = {"command": "printf hi > hello.txt", "description": "Create hello.txt containing hi"}
    assert [(m.role, m.tool_calls, m.tool_call_id) for m in second.messages] == [
        ("system", [], None),
        ("user", [], None),
        ("system", [], None),
        ("assistant", [ToolCall(id="toolu_66736ab4558b4d039006514b", name="Bash", arguments=args)], None),
        ("tool", [], "toolu_66736ab4558b4d039006514b"),
    ]
    assert second.messages[4].content == "(Bash completed with no output)"
    blocks = fixture(shared_fixtures, "claude-code", 2)["messages"][0]["content"]
    assert second.messages[1].content == blocks[0]["text"] + "\n" + "create hello.txt"
    # blocks with cache_control (call 1) and a plain string (call 2) give the same message
    assert first.messages == second.messages[:3]
    assert (first.model, first.max_tokens, first.stream) == ("claude-opus-5-5", 128000, True)
    assert len(first.tools) == 12 and first.tools == second.tools


def test_claude_code_billing_line_is_not_part_of_the_prompt(shared_fixtures: Path) -> None:
    """Claude Code's first system block is `x-anthropic-billing-header: cc_version=<v>.<hash of the
    request>; ...`: left in, two tasks' prompts differed from the 25th token on. Dropped, the same
    request with another hash parses to the same messages."""
    body = fixture(shared_fixtures, "claude-code-bare", 1)
    assert body["system"][0]["text"].startswith("x-anthropic-billing-header: cc_version=")
    req = A.parse(body)
    assert req.messages[0].content.startswith("You are a Claude agent")
    assert "billing" not in req.messages[0].content
    other = json.loads(json.dumps(body))
    other["system"][0]["text"] = other["system"][0]["text"].replace(
        "cc_version=2.1.332.", "cc_version=2.1.332.f0"
    )
    assert A.parse(other).messages == req.messages
    # as a string's first line, or the first line of a longer block: only that line goes
    text = "\n".join(b["text"] for b in body["system"])
    assert A.parse(body | {"system": text}).messages[0].content == text.partition("\n")[2]
    merged = [{"type": "text", "text": text}]
    assert A.parse(body | {"system": merged}).messages[0].content == text.partition("\n")[2]
    # not the first line: kept (it is then text the harness meant the model to read)
    kept = "You are X.\nx-anthropic-billing-header: a;"
    assert A.parse(body | {"system": kept}).messages[0].content == kept


def test_codex_input_items(shared_fixtures: Path) -> None:
    req = R.parse(fixture(shared_fixtures, "codex-responses", 2))
    roles = [(m.role, [(t.name, t.arguments) for t in m.tool_calls], m.tool_call_id) for m in req.messages]
    assert roles == [
        ("developer", [], None),
        ("developer", [], None),
        ("user", [], None),
        ("user", [], None),
        ("assistant", [("exec_command", {"cmd": "printf hi > hello.txt"})], None),
        ("tool", [], "call_0e89c60038b648e4b0cdb769"),
    ]
    assert req.messages[3].content == "create hello.txt"
    names = [(t.name, t.type) for t in req.tools]
    assert ("apply_patch", "custom") in names and ("tool_search", "function") in names
    assert "web_search" not in [n for n, _ in names]
    assert len(names) == 9
    assert req.options == {
        "custom_tools": ["apply_patch"],
        "local_shell": False,
        "namespaced": {},
        "encrypted_reasoning": True,
    }
    apply_patch = next(t for t in req.tools if t.name == "apply_patch")
    assert list(apply_patch.parameters["properties"]) == ["input"]


def test_openclaw_chat_tool_turn(shared_fixtures: Path) -> None:
    req = C.parse(fixture(shared_fixtures, "openclaw-chat", 2))
    assert [m.role for m in req.messages] == ["system", "user", "assistant", "tool", "user"]
    assistant = req.messages[2]
    assert (assistant.content, assistant.tool_calls[0].name) == ("", "exec")
    assert assistant.tool_calls[0].arguments == {"command": "printf hi > hello.txt"}
    assert req.messages[3].tool_call_id == "call208f1a4589a44a8583c830ae"
    assert (req.max_tokens, req.options["include_usage"]) == (4096, True)


def test_responses_custom_local_shell_and_reasoning_items_merge_into_one_turn() -> None:
    body = {
        "model": "m",
        "instructions": "sys",
        "tools": [{"type": "local_shell"}, {"type": "custom", "name": "apply_patch", "description": "d"}],
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think"}]},
            {"role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            {"type": "local_shell_call", "call_id": "c1", "action": {"type": "exec", "command": ["ls"]}},
            {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "*** Begin Patch"},
            {"type": "local_shell_call_output", "call_id": "c1", "output": "a"},
            {
                "type": "custom_tool_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "b"}],
            },
        ],
    }
    req = R.parse(body)
    assert req.messages == [
        ChatMessage(role="system", content="sys"),
        ChatMessage(role="user", content="go"),
        ChatMessage(
            role="assistant",
            content="ok",
            reasoning="think",
            tool_calls=[
                ToolCall(id="c1", name="local_shell", arguments={"command": ["ls"]}),
                ToolCall(id="c2", name="apply_patch", arguments={"input": "*** Begin Patch"}, type="custom"),
            ],
        ),
        ChatMessage(role="tool", content="a", tool_call_id="c1"),
        ChatMessage(role="tool", content="b", tool_call_id="c2"),
    ]
    c = completion(tool_calls=[ToolCall(id="call_1", name="local_shell", arguments={"command": ["pwd"]})])
    item = R.response_json(req, c)["output"][0]
    assert item == {
        "type": "local_shell_call",
        "id": "lsc_1_0",
        "call_id": "call_1",
        "status": "completed",
        "action": {"type": "exec", "command": ["pwd"]},
    }


def completion(**kw: Any) -> Completion:
    base: dict[str, Any] = {
        "response_id": "resp_1",
        "model": "m",
        "text": "",
        "reasoning": None,
        "tool_calls": [],
        "finish_reason": "stop",
        "prompt_tokens": 7,
        "output_tokens": 3,
        "created": 100,
    }
    return Completion(**{**base, **kw})


REQ = CanonicalRequest(dialect="x", model="m", messages=[], tools=[], options={"include_usage": True})


def test_anthropic_wire_json_and_events_exact() -> None:
    tc = ToolCall(id="toolu_1", name="exec", arguments={"command": "ls"})
    c = completion(response_id="msg_1", text="hi", reasoning="hmm", tool_calls=[tc])
    assert A.response_json(REQ, c) == {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": hashlib.sha256(b"hmm").hexdigest()[:32]},
            {"type": "text", "text": "hi"},
            {"type": "tool_use", "id": "toolu_1", "name": "exec", "input": {"command": "ls"}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 7, "output_tokens": 3},
    }
    events = sse.parse_stream(
        b"".join(A.stream_head(REQ, "msg_1", 7) + A.stream_events(REQ, completion(text="ok")))
    )
    assert [(n, json.loads(d)) for n, d in events] == [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "m",
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 7, "output_tokens": 0},
                },
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        (
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 3},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def test_chat_events_exact() -> None:
    tc = ToolCall(id="call_1", name="exec", arguments={"a": 1})
    raw = b"".join(
        C.stream_events(REQ, completion(response_id="chatcmpl-1", tool_calls=[tc], finish_reason="length"))
    )
    chunks = [d for _, d in sse.parse_stream(raw)]
    assert chunks[-1] == "[DONE]"
    deltas = [(json.loads(c)["choices"] or [{}])[0].get("delta") for c in chunks[:-1]]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "exec", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"a":1}'}}]},
        {},
        None,
    ]
    assert json.loads(chunks[-2])["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert grammar.check_chat(raw)["finish_reason"] == "length"


def test_responses_events_order_and_incomplete() -> None:
    tc = ToolCall(id="call_1", name="exec", arguments={})
    c = completion(text="hi", reasoning="r", tool_calls=[tc], finish_reason="length")
    raw = b"".join(R.stream_head(REQ, "resp_1", 7) + R.stream_events(REQ, c))
    names = [n for n, _ in sse.parse_stream(raw)]
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.incomplete",
    ]
    final = grammar.check_responses(raw)
    assert (final["status"], final["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
    assert final["usage"]["total_tokens"] == 10


def _swap(raw: bytes, i: int, j: int) -> bytes:
    blocks = raw.split(b"\n\n")
    blocks[i], blocks[j] = blocks[j], blocks[i]
    return b"\n\n".join(blocks)


def test_grammar_checkers_reject_broken_streams() -> None:
    good_a = b"".join(A.stream_head(REQ, "msg_1", 7) + A.stream_events(REQ, completion(text="ok")))
    assert grammar.check_anthropic(good_a)["stop_reason"] == "end_turn"
    with pytest.raises(grammar.GrammarError):
        grammar.check_anthropic(_swap(good_a, 3, 4))  # block stop after message_delta
    with pytest.raises(grammar.GrammarError):
        grammar.check_anthropic(good_a.split(b"event: message_start", 1)[0] + good_a.split(b"\n\n", 1)[1])
    good_c = b"".join(C.stream_events(REQ, completion(response_id="c", text="ok")))
    with pytest.raises(grammar.GrammarError):
        grammar.check_chat(good_c.replace(sse.DONE, b""))
    good_r = b"".join(R.stream_head(REQ, "resp_1", 7) + R.stream_events(REQ, completion(text="ok")))
    with pytest.raises(grammar.GrammarError):
        grammar.check_responses(_swap(good_r, 2, 3))  # sequence numbers out of order


CLAUDE_COMPACT = (
    "Your task is to create a detailed summary of the conversation so far, paying close attention to the "
    "user's explicit requests and your previous actions."
)
CODEX_COMPACT = (
    "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM."
)


@pytest.mark.parametrize(
    ("text", "tagged"),
    [
        (CLAUDE_COMPACT, True),
        (CODEX_COMPACT, True),
        ("create hello.txt", False),
        ("write a summary of sales.csv into report.md", False),
        ("make the output more compact", False),
        (  # Claude Code's restart after a compaction hands the summary over: no request
            "This session is being continued from a previous conversation that ran out of context. The "
            "summary below covers the earlier portion of the conversation.\n\nSummary: ...",
            False,
        ),
    ],
)
def test_compaction_heuristic(text: str, tagged: bool) -> None:
    msgs = [ChatMessage(role="user", content="earlier"), ChatMessage(role="user", content=text)]
    assert capture.is_compaction_request(msgs) is tagged


def test_headers_of_interest_never_keep_keys() -> None:
    headers = {
        "user-agent": "claude-cli/2",
        "x-api-key": "secret",
        "authorization": "Bearer s",
        "x-app": "cli",
    }
    assert capture.headers_of_interest(headers) == {"user-agent": "claude-cli/2", "x-app": "cli"}


def test_session_store_rules(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.server_url = "http://127.0.0.1:9"
    info = store.open("r1")
    assert info.base_url == f"http://127.0.0.1:9/r/{info.token}"
    assert info.openai_base_url == info.base_url + "/v1"
    with pytest.raises(ValueError, match="already has an open session"):
        store.open("r1")
    for bad in ("", "..", "a/b"):
        with pytest.raises(ValueError):
            store.open(bad)
    assert store.by_api_key(info.token) is store.by_path_token(info.token) is not None
    assert store.by_api_key("other") is None
    assert store.close("r1") == []
    assert (tmp_path / "r1" / "calls.jsonl").read_text() == ""
    assert store.by_path_token(info.token) is None


def _bound(template: str) -> str:
    """A route template's `{name}` parts filled in (`/v1beta/models/{model}:x` -> `/v1beta/models/m:x`)."""
    return re.sub(r"\{[^}]*\}", "m", template)


@pytest.mark.parametrize("name", sorted(DIALECTS))
def test_every_registered_dialect_provides_what_the_app_needs(name: str) -> None:
    """The seam: the app, the handler and `limits` use only these members, so a dialect that has them
    (its module plus one line in DIALECTS) is served."""
    registered = DIALECTS[name]
    assert registered.name == name and registered.routes
    for template in registered.routes:
        endpoint = resolve(_bound(template))
        assert endpoint is not None, template
        assert endpoint.dialect.name == name and isinstance(endpoint.dialect, Dialect)
        d = endpoint.dialect
        assert isinstance(d.tool_id_prefix, str) and isinstance(d.response_id_prefix, str)
        assert isinstance(d.keepalive, bytes) and d.stream_media_type in (
            "text/event-stream",
            "application/json",
        )
        if endpoint.count_tokens is not None:
            assert json.loads(sse.dumps(endpoint.count_tokens(5)))
        error = json.dumps(d.error_json(400, "bad thing", "field"))
        assert "bad thing" in error
        message, param, code = d.overflow(90, 80, "the engine's context is 81 tokens")
        assert "90" in message and "80" in message and "the engine's context is 81 tokens" in message
        assert param is None or isinstance(param, str)
        assert code is None or isinstance(code, str)
        req = CanonicalRequest(name, "m", [ChatMessage(role="user", content="hi")], [], stream=True)
        c = completion(text="ok", tool_calls=[ToolCall(id=d.tool_id_prefix + "1", name="exec", arguments={})])
        assert json.loads(sse.dumps(d.response_json(req, c)))
        head = d.stream_head(req, d.response_id_prefix + "1", 7)
        events = d.stream_events(req, c)
        failed = d.stream_error(req, d.response_id_prefix + "1", 500, "boom")
        assert all(isinstance(x, bytes) and x for x in head + events + failed)
    paths = [_bound(t) for d in DIALECTS.values() for t in d.routes]
    assert len(paths) == len(set(paths)), "two dialects claim one route"


def test_app_handler_and_limits_never_name_a_dialect() -> None:
    """Adding a dialect touches its module and the registry line only (AGENTS.md, "Adding a dialect")."""
    proxy = Path(__file__).resolve().parents[1] / "src" / "harnessrl" / "proxy"
    for module in ("app.py", "handler.py", "limits.py"):
        source = (proxy / module).read_text()
        for name in DIALECTS:
            assert f'"{name}"' not in source and f"'{name}'" not in source, (module, name)
