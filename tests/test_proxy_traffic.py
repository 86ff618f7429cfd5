"""Real captured harness traffic through a live proxy (scripted engine, real Qwen3 tokenizer).

For every fixture folder: call 1 and call 2 are sent as captured (same path, body and headers of
interest), the scripted engine answers with the fixture's own reply, every stream is checked against
its API's event grammar, and the decoded answer must be exactly the scripted one. For the harnesses
whose call 2 extends call 1 (Claude Code and pi's Anthropic mode after normalisation, Codex, OpenClaw
responses, pi's chat and Responses modes, Continue, Kilo, Copilot in both wire APIs) call 2's
prompt ids must start with call 1's prompt ids + output ids; for the two OpenClaw dialects that move a
context message to the end, call 2 must be marked `retokenized` instead (never silently merged).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessrl.proxy import grammar
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.testing import scripted_proxy, turn_from_decision

FOLDERS = [
    "claude-code",
    "claude-code-bare",
    "codex-responses",
    "openclaw-responses",
    "openclaw-chat",
    "openclaw-anthropic",
    "pi-chat",
    "pi-responses",
    "pi-anthropic",
    "continue",
    "kilo",
    "copilot",
    "copilot-responses",
    "cline",
    "nanocoder",
    "mistral-vibe",
    "kimi-cli",
]
SPLICED = {"claude-code", "claude-code-bare", "codex-responses", "openclaw-responses", *FOLDERS[6:]}
CHECKERS = {
    "/v1/messages": grammar.check_anthropic,
    "/v1/chat/completions": grammar.check_chat,
    "/v1/responses": grammar.check_responses,
}
_DROP_HEADERS = {"host", "content-length", "accept-encoding", "connection", "x-api-key", "authorization"}


def load(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def send(base_url: str, captured: dict[str, Any]) -> httpx.Response:
    headers = {k: v for k, v in captured["headers"].items() if k.lower() not in _DROP_HEADERS}
    return httpx.post(base_url + captured["path"], json=captured["body"], headers=headers, timeout=60)


def answer(route: str, decoded: dict[str, Any]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """(text, [(tool name, arguments)]) of a decoded stream, whatever the API."""
    if route == "/v1/messages":
        text = "".join(b["text"] for b in decoded["content"] if b["type"] == "text")
        calls = [(b["name"], b["input"]) for b in decoded["content"] if b["type"] == "tool_use"]
    elif route == "/v1/chat/completions":
        text = decoded["content"]
        calls = [(c["name"], json.loads(c["arguments"])) for c in decoded["tool_calls"]]
    else:
        out = decoded["output"]
        text = "".join(p["text"] for i in out if i["type"] == "message" for p in i["content"])
        calls = [(i["name"], json.loads(i["arguments"])) for i in out if i["type"] == "function_call"]
    return text, calls


def expected(decision: list[Any]) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    if decision[0] == "tool":
        return "", [(decision[1], decision[2])]
    return decision[1], []


@pytest.fixture(params=FOLDERS)
def traffic(
    request: pytest.FixtureRequest, shared_fixtures: Path
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    yield request.param, load(shared_fixtures / "harness-traffic" / request.param)


@pytest.fixture
def proxy_for(traffic: tuple[str, list[dict[str, Any]]]) -> Iterator[ThreadedProxyServer]:
    _, captured = traffic
    server = scripted_proxy([turn_from_decision(c["reply"]["decision"]) for c in captured]).start()
    yield server
    server.stop()


def test_fixture_calls_parse_render_and_stream_valid_events(
    traffic: tuple[str, list[dict[str, Any]]], proxy_for: ThreadedProxyServer
) -> None:
    name, captured = traffic
    sessions = proxy_for.server.deps.sessions
    info = sessions.open(f"rollout-{name}")
    for c in captured:
        route = c["path"].split("?")[0]
        resp = send(info.base_url, c)
        assert resp.status_code == 200, resp.text
        assert resp.headers["content-type"].startswith("text/event-stream")
        decoded = CHECKERS[route](resp.content)
        assert answer(route, decoded) == expected(c["reply"]["decision"])
    calls = sessions.calls(f"rollout-{name}")
    assert [c.index for c in calls] == [0, 1]
    assert all(c.tags == ["stream"] and c.partial is False and c.error is None for c in calls)
    assert calls[0].render == "rendered"
    first, second = calls
    assert first.request_digest != second.request_digest
    assert len(first.output_logprobs) == len(first.output_ids)
    assert first.headers.get("user-agent") == captured[0]["headers"].get(
        "User-Agent", captured[0]["headers"].get("user-agent")
    )
    prefix = first.prompt_ids + first.output_ids
    if name in SPLICED:
        assert second.render == "spliced"
        assert second.spliced_from == first.call_id
        assert second.prompt_ids[: len(prefix)] == prefix
        assert len(second.prompt_ids) > len(prefix)
        # the session remembers the re-sent conversation once: call 2's turn holds call 1's objects
        session = sessions.by_path_token(info.token)
        assert session is not None
        one, two = session.turns
        shared = [*one.messages, one.output]
        assert len(two.messages) > len(shared)
        assert all(a is b for a, b in zip(two.messages, shared, strict=False))
        assert two.tools is one.tools
    else:
        assert second.render == "retokenized"
        assert second.spliced_from is None
    # the same conversation has the same system prompt and tool set in both calls
    assert first.system_digest == second.system_digest
    assert first.tools_digest == second.tools_digest


def test_fixture_calls_non_streaming_json(
    traffic: tuple[str, list[dict[str, Any]]], proxy_for: ThreadedProxyServer
) -> None:
    name, captured = traffic
    info = proxy_for.server.deps.sessions.open(f"json-{name}")
    c = captured[0]
    route = c["path"].split("?")[0]
    resp = httpx.post(info.base_url + c["path"], json={**c["body"], "stream": False}, timeout=60)
    assert resp.status_code == 200, resp.text
    body = resp.json()
    tool, args = c["reply"]["decision"][1], c["reply"]["decision"][2]
    if route == "/v1/messages":
        assert body["stop_reason"] == "tool_use"
        assert [(b["type"], b["name"], b["input"]) for b in body["content"]] == [("tool_use", tool, args)]
    elif route == "/v1/chat/completions":
        choice = body["choices"][0]
        assert choice["finish_reason"] == "tool_calls"
        assert choice["message"]["content"] is None
        fn = choice["message"]["tool_calls"][0]["function"]
        assert (fn["name"], json.loads(fn["arguments"])) == (tool, args)
    else:
        assert body["status"] == "completed"
        item = body["output"][0]
        assert (item["type"], item["name"], json.loads(item["arguments"])) == ("function_call", tool, args)
