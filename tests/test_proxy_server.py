"""The live proxy's behaviour at its edges: sessions and auth, 4xx shapes, engine faults, keep-alives,
clients that disconnect, retry replay, capture flushing. Real uvicorn on 127.0.0.1, scripted engine,
real Qwen3 tokenizer."""

from __future__ import annotations

import gzip
import itertools
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harnessrl.config import ProxyConfig
from harnessrl.proxy import grammar
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.sse import parse_stream
from harnessrl.proxy.testing import scripted_proxy
from harnessrl.types import ChatMessage, ModelCall, ToolCall

TOOL_TURN = ChatMessage(role="assistant", tool_calls=[ToolCall(name="exec", arguments={"command": "ls"})])
ANTHROPIC = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSES = {"model": "m", "input": "hi"}


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedProxyServer]:
    s = scripted_proxy(["done"], config=ProxyConfig(max_body_bytes=4000)).start()
    yield s
    s.stop()


# -- probes, sessions, auth ----------------------------------------------------------------------------


def test_probes_and_models(server: ThreadedProxyServer) -> None:
    assert httpx.head(server.url + "/").status_code == 200
    assert httpx.get(server.url + "/").json() == {"status": "ok"}
    # Every route but the probe needs a live session's token (prefix or API key): a proxy listening
    # beyond loopback answers nobody else.
    assert httpx.get(server.url + "/v1/models").status_code == 401
    assert httpx.get(server.url + "/v1/models/claude-x").status_code == 401
    assert httpx.get(server.url + "/r/nope/v1/models").status_code == 401
    assert httpx.get(server.url + "/v1/models", headers={"x-api-key": "nope"}).status_code == 401
    info = server.open_session()
    key = {"authorization": f"Bearer {info.token}"}
    models = httpx.get(server.url + "/v1/models", headers=key).json()
    assert [m["id"] for m in models["data"]] == ["harnessrl"]
    assert httpx.get(server.url + "/v1/models/claude-x", headers=key).json()["id"] == "claude-x"
    assert httpx.head(info.base_url + "/").status_code == 200
    assert httpx.get(info.openai_base_url + "/models").json()["data"][0]["id"] == "harnessrl"
    assert httpx.get(server.url + "/r/nope/").status_code == 401


def test_unknown_tokens_get_401_in_each_api_shape(server: ThreadedProxyServer) -> None:
    r = httpx.post(server.url + "/r/bogus/v1/messages", json=ANTHROPIC)
    assert (r.status_code, r.json()["type"], r.json()["error"]["type"]) == (
        401,
        "error",
        "authentication_error",
    )
    r = httpx.post(server.url + "/v1/chat/completions", json=CHAT, headers={"authorization": "Bearer nope"})
    assert (r.status_code, r.json()["error"]["type"]) == (401, "authentication_error")
    r = httpx.post(server.url + "/v1/responses", json=RESPONSES)
    assert r.status_code == 401


def test_token_as_api_key_reaches_only_its_own_session(server: ThreadedProxyServer) -> None:
    a, b = server.open_session(), server.open_session()
    r = httpx.post(server.url + "/v1/messages", json=ANTHROPIC, headers={"x-api-key": a.token})
    assert r.status_code == 200 and r.json()["content"] == [{"type": "text", "text": "done"}]
    r = httpx.post(
        server.url + "/v1/chat/completions", json=CHAT, headers={"authorization": f"Bearer {b.token}"}
    )
    assert r.json()["choices"][0]["message"]["content"] == "done"
    # a path token wins over a (different, valid) API key: b's key cannot write into a's session
    r = httpx.post(
        b.openai_base_url + "/responses", json=RESPONSES, headers={"authorization": f"Bearer {a.token}"}
    )
    assert r.status_code == 200
    assert [c.dialect for c in server.calls(a.rollout_id)] == ["anthropic"]
    assert [c.dialect for c in server.calls(b.rollout_id)] == ["openai_chat", "openai_responses"]
    assert [c.index for c in server.calls(b.rollout_id)] == [0, 1]


def test_closed_session_flushes_jsonl_and_then_401(tmp_path: Path) -> None:
    server = scripted_proxy(["done"], capture_dir=str(tmp_path)).start()
    try:
        sessions = server.server.deps.sessions
        info = sessions.open("roll-1")
        for _ in range(2):
            assert (
                httpx.post(info.base_url + "/v1/messages", json={**ANTHROPIC, "stream": True}).status_code
                == 200
            )
        closed = sessions.close("roll-1")
        lines = (tmp_path / "roll-1" / "calls.jsonl").read_text().splitlines()
        assert [ModelCall.model_validate_json(x) for x in lines] == closed
        assert [c.index for c in closed] == [0, 1]
        assert closed[1].replay_of == closed[0].call_id  # same body, no retry header: a replay
        assert httpx.post(info.base_url + "/v1/messages", json=ANTHROPIC).status_code == 401
    finally:
        server.stop()


def test_an_open_session_holds_prompt_ids_the_collector_skips(tmp_path: Path) -> None:
    """While open, a session holds each call's prompt ids as a tuple shared with its splice Turn (the
    garbage collector stops walking it after one collection); everything that leaves the session (the
    journal, watchers, `calls`, `close`) gets the list ModelCall declares, with no serializer warning."""
    import gc
    import warnings

    server = scripted_proxy([TOOL_TURN, "done"], capture_dir=str(tmp_path)).start()
    try:
        sessions = server.server.deps.sessions
        info = sessions.open("held")
        seen: list[ModelCall] = []
        sessions.watch("held", seen.append)
        turn_one = {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "exec", "input": {"command": "ls"}}],
        }
        result = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "a.txt"}],
        }
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a tuple reaching pydantic's serializer warns
            for body in (ANTHROPIC, {**ANTHROPIC, "messages": [*ANTHROPIC["messages"], turn_one, result]}):
                assert httpx.post(info.base_url + "/v1/messages", json=body).status_code == 200
            session = sessions.by_path_token(info.token)
            assert session is not None
            held = [c.prompt_ids for c in session.calls]
            assert [type(x) for x in held] == [tuple, tuple]
            assert [t.prompt_ids for t in session.turns] == held and session.turns[1].prompt_ids is held[1]
            assert sessions.calls("held")[1].render == "spliced"
            gc.collect()
            assert not any(gc.is_tracked(x) for x in held)
            assert [c.prompt_ids for c in seen] == held  # watchers see the calls as held
            assert all(
                a is b for a, b in zip(session.turns[1].messages, session.turns[0].messages, strict=False)
            )
            assert session.turns[1].tools is session.turns[0].tools  # the re-sent copies are not kept
            assert [type(c.prompt_ids) for c in sessions.calls("held")] == [list, list]
            session.updated(session.calls[0])  # a call marked again (partial) is journaled as a list
            closed = sessions.close("held")
        assert [type(c.prompt_ids) for c in closed] == [list, list]
        assert [c.prompt_ids for c in closed] == [list(x) for x in held]
        assert all(c is h for c, h in zip(closed, session.calls, strict=True))  # later marks reach them
        lines = (tmp_path / "held" / "calls.jsonl").read_text().splitlines()
        assert len(lines) == 2  # rewritten at close, one line per call
        assert [ModelCall.model_validate_json(x) for x in lines] == closed
    finally:
        server.stop()


def test_open_mode_maps_any_key_to_the_default_session() -> None:
    server = scripted_proxy(["done"], open_mode=True).start()
    try:
        r = httpx.post(server.url + "/v1/messages", json=ANTHROPIC, headers={"x-api-key": "anything"})
        assert r.status_code == 200
        assert [c.dialect for c in server.server.deps.sessions.calls("default")] == ["anthropic"]
        assert httpx.post(server.url + "/r/unknown/v1/messages", json=ANTHROPIC).status_code == 401
    finally:
        server.stop()


# -- 4xx -----------------------------------------------------------------------------------------------


def test_body_limit_is_413(server: ThreadedProxyServer) -> None:
    info = server.open_session()
    big = {**ANTHROPIC, "messages": [{"role": "user", "content": "x" * 5000}]}
    r = httpx.post(info.base_url + "/v1/messages", json=big)
    assert r.status_code == 413
    assert r.json()["error"]["type"] == "request_too_large"
    assert server.calls(info.rollout_id) == []


BAD: list[tuple[str, Any, str | None]] = [
    ("/v1/messages", b"{not json", None),
    ("/v1/messages", b"[1, 2]", None),
    ("/v1/messages", {**ANTHROPIC, "messages": "hi"}, "messages"),
    ("/v1/messages", {**ANTHROPIC, "stop_sequences": ["x"]}, "stop_sequences"),
    ("/v1/messages", {**ANTHROPIC, "tool_choice": {"type": "any"}}, "tool_choice"),
    (
        "/v1/messages",
        {**ANTHROPIC, "messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
        "messages[0].content[0].type",
    ),
    (
        "/v1/messages",
        {
            **ANTHROPIC,
            "messages": [
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}
            ],
        },
        "messages",
    ),
    ("/v1/chat/completions", {**CHAT, "n": 2}, "n"),
    (
        "/v1/chat/completions",
        {
            **CHAT,
            "messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {}}]}],
        },
        "messages[0].content[0].type",
    ),
    ("/v1/chat/completions", {**CHAT, "tool_choice": "required"}, "tool_choice"),
    (
        "/v1/chat/completions",
        {**CHAT, "messages": [{"role": "tool", "content": "x", "tool_call_id": "c"}]},
        "messages",
    ),
    ("/v1/responses", {**RESPONSES, "input": [{"type": "input_image"}]}, "input[0].type"),
    (
        "/v1/responses",
        {**RESPONSES, "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]},
        "messages",
    ),
    ("/v1/responses", {**RESPONSES, "previous_response_id": "resp_1"}, "previous_response_id"),
]


@pytest.mark.parametrize(("route", "body", "param"), BAD)
def test_bad_requests_are_400_naming_the_field(
    server: ThreadedProxyServer, route: str, body: Any, param: str | None
) -> None:
    info = server.open_session()
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    r = httpx.post(info.base_url + route, content=content, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    if route == "/v1/messages":
        assert r.json()["error"]["type"] == "invalid_request_error"
        if param is not None:
            assert param in r.json()["error"]["message"]
    else:
        assert r.json()["error"]["param"] == param
    assert server.calls(info.rollout_id) == []


def test_wrong_content_type_is_400(server: ThreadedProxyServer) -> None:
    info = server.open_session()
    r = httpx.post(
        info.base_url + "/v1/messages", content=json.dumps(ANTHROPIC), headers={"content-type": "text/plain"}
    )
    assert r.status_code == 400 and "content-type" in r.json()["error"]["message"]


# -- engine faults -------------------------------------------------------------------------------------


def test_engine_fault_fails_that_call_only() -> None:
    server = scripted_proxy(["done"], fault_calls={0, 2}).start()
    try:
        info = server.server.deps.sessions.open("faults")
        r = httpx.post(info.base_url + "/v1/messages", json=ANTHROPIC)
        assert (r.status_code, r.json()["error"]["type"]) == (500, "api_error")
        assert "injected fault on call 0" in r.json()["error"]["message"]
        r = httpx.post(info.openai_base_url + "/chat/completions", json=CHAT)
        assert r.status_code == 200
        r = httpx.post(info.base_url + "/v1/messages", json={**ANTHROPIC, "stream": True, "max_tokens": 99})
        assert r.status_code == 200
        assert grammar.check_anthropic(r.content)["error"]["type"] == "api_error"
        recorded = server.server.deps.sessions.calls("faults")
        assert [(c.finish_reason, c.output_ids == []) for c in recorded] == [
            ("error", True),
            ("stop", False),
            ("error", True),
        ]
        assert recorded[0].error == "EngineError: injected fault on call 0"
    finally:
        server.stop()


# -- keep-alives and disconnects -------------------------------------------------------------------------


def _timed_chunks(url: str, body: dict[str, Any]) -> list[tuple[float, bytes]]:
    out: list[tuple[float, bytes]] = []
    start = time.monotonic()
    with httpx.stream("POST", url, json=body, timeout=30) as r:
        assert r.status_code == 200
        for chunk in r.iter_raw():
            out.append((time.monotonic() - start, chunk))
    return out


KEEPALIVE_CASES = {
    "anthropic": ("/v1/messages", {**ANTHROPIC, "stream": True}, b"event: ping", b"event: message_start"),
    "openai_chat": ("/v1/chat/completions", {**CHAT, "stream": True}, b": keep-alive", b": keep-alive"),
    "openai_responses": (
        "/v1/responses",
        {**RESPONSES, "stream": True},
        b": keep-alive",
        b"event: response.created",
    ),
}


@pytest.mark.parametrize("dialect", sorted(KEEPALIVE_CASES))
def test_keepalives_while_a_slow_engine_generates(dialect: str) -> None:
    server = scripted_proxy(["done"], delay_s=1.2, config=ProxyConfig(keepalive_s=0.2)).start()
    try:
        info = server.server.deps.sessions.open("slow")
        route, body, ping, first = KEEPALIVE_CASES[dialect]
        chunks = _timed_chunks(info.base_url + route, body)
        raw = b"".join(c for _, c in chunks)
        assert raw.count(ping) >= 4
        assert chunks[0][1].startswith(first)
        times = [0.0] + [t for t, _ in chunks]
        assert max(b - a for a, b in itertools.pairwise(times)) < 0.2 + 0.35
        if dialect == "anthropic":
            assert grammar.check_anthropic(raw)["content"] == [{"type": "text", "text": "done"}]
        elif dialect == "openai_chat":
            assert grammar.check_chat(raw)["content"] == "done"
        else:
            assert grammar.check_responses(raw)["output"][0]["content"][0]["text"] == "done"
    finally:
        server.stop()


def test_client_disconnect_mid_stream_keeps_a_partial_call() -> None:
    server = scripted_proxy(["done"], delay_s=0.8, config=ProxyConfig(keepalive_s=0.1)).start()
    try:
        sessions = server.server.deps.sessions
        info = sessions.open("gone")
        host, port = server.url.removeprefix("http://").split(":")
        body = json.dumps({**ANTHROPIC, "stream": True}).encode()
        head = f"POST /r/{info.token}/v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        with socket.create_connection((host, int(port))) as sock:
            sock.sendall(head.encode() + f"content-length: {len(body)}\r\n\r\n".encode() + body)
            received = b""
            while b"message_start" not in received:
                received += sock.recv(65536)
        deadline = time.monotonic() + 5
        while not sessions.calls("gone") and time.monotonic() < deadline:
            time.sleep(0.05)
        (call,) = sessions.calls("gone")
        assert call.partial is True
        assert call.error is None and call.finish_reason == "stop"
        assert len(call.output_ids) == len(call.output_logprobs) > 0
        # the server keeps serving
        r = httpx.post(info.base_url + "/v1/messages", json={**ANTHROPIC, "max_tokens": 50})
        assert r.status_code == 200
    finally:
        server.stop()


# -- retries, token counting, tags ---------------------------------------------------------------------


def test_retry_is_replayed_without_sampling() -> None:
    server = scripted_proxy([TOOL_TURN, "done"]).start()
    try:
        engine = server.server.deps.engine
        info = server.server.deps.sessions.open("retry")
        url = info.base_url + "/v1/messages"
        first = httpx.post(url, json=ANTHROPIC, headers={"x-stainless-retry-count": "0"}).json()
        again = httpx.post(url, json=ANTHROPIC, headers={"x-stainless-retry-count": "1"}).json()
        fresh = httpx.post(url, json=ANTHROPIC, headers={"x-stainless-retry-count": "0"}).json()
        assert engine.calls == 2  # type: ignore[attr-defined]
        assert again["content"] == first["content"] and again["id"] != first["id"]
        assert fresh["content"][0]["input"] == {"command": "ls"}
        a, b, c = server.server.deps.sessions.calls("retry")
        assert (b.replay_of, b.output_ids, b.prompt_ids, b.tags) == (
            a.call_id,
            a.output_ids,
            a.prompt_ids,
            ["retry_replay"],
        )
        assert c.replay_of is None and c.request_digest == a.request_digest
    finally:
        server.stop()


def test_count_tokens_equals_the_rendered_prompt(server: ThreadedProxyServer) -> None:
    info = server.open_session()
    body = {**ANTHROPIC, "system": [{"type": "text", "text": "be brief"}]}
    count = httpx.post(info.base_url + "/v1/messages/count_tokens", json=body).json()
    httpx.post(info.base_url + "/v1/messages", json=body)
    (call,) = server.calls(info.rollout_id)
    assert count == {"input_tokens": len(call.prompt_ids)}


def test_compaction_request_is_tagged(server: ThreadedProxyServer) -> None:
    info = server.open_session()
    ask = "Your task is to create a detailed summary of the conversation so far, paying close attention to..."
    body = {
        **ANTHROPIC,
        "messages": [{"role": "user", "content": "fix it"}, {"role": "assistant", "content": "ok"}],
    }
    body["messages"].append({"role": "user", "content": ask})
    httpx.post(info.base_url + "/v1/messages", json=body)
    httpx.post(info.base_url + "/v1/messages", json=ANTHROPIC)
    tagged, plain = server.calls(info.rollout_id)
    assert tagged.tags == ["compaction_request"] and plain.tags == []
    assert tagged.render == "retokenized" and plain.render == "rendered"


def test_parse_stream_reads_events_and_skips_comments() -> None:
    raw = b": keep-alive\n\nevent: ping\ndata: {}\n\ndata: [DONE]\n\n"
    assert parse_stream(raw) == [("ping", "{}"), (None, "[DONE]")]


def test_a_failing_capture_never_breaks_serving() -> None:
    server = scripted_proxy(["done"]).start()
    try:
        deps = server.server.deps

        def broken_turn(**kwargs: Any) -> Any:
            raise RuntimeError("capture bug")

        deps.make_turn = broken_turn
        info = deps.sessions.open("cap")
        for stream in (False, True):
            r = httpx.post(
                info.base_url + "/v1/messages", json={**ANTHROPIC, "stream": stream, "max_tokens": 9 + stream}
            )
            assert r.status_code == 200
        assert grammar.check_anthropic(r.content)["content"] == [{"type": "text", "text": "done"}]
        # the ModelCalls were recorded before the splice record failed; no Turn was remembered
        assert [c.text for c in deps.sessions.calls("cap")] == ["done", "done"]
    finally:
        server.stop()


MALFORMED = 'Let me run it.\n<tool_call>\n{"name": "exec", "arguments": {"command": "ls"</tool_call>'


@pytest.mark.parametrize("max_tokens", [200, 3])
def test_malformed_or_truncated_output_still_streams_valid_events(max_tokens: int) -> None:
    server = scripted_proxy([MALFORMED]).start()
    try:
        info = server.server.deps.sessions.open("bad-output")
        a = httpx.post(
            info.base_url + "/v1/messages", json={**ANTHROPIC, "stream": True, "max_tokens": max_tokens}
        )
        chat = {**CHAT, "stream": True, "max_tokens": max_tokens}
        c = httpx.post(info.openai_base_url + "/chat/completions", json=chat)
        resp = {**RESPONSES, "stream": True, "max_output_tokens": max_tokens}
        r = httpx.post(info.openai_base_url + "/responses", json=resp)
        decoded_a = grammar.check_anthropic(a.content)
        decoded_c = grammar.check_chat(c.content)
        decoded_r = grammar.check_responses(r.content)
        recorded = server.server.deps.sessions.calls("bad-output")
        if max_tokens == 3:
            assert (decoded_a["stop_reason"], decoded_c["finish_reason"], decoded_r["status"]) == (
                "max_tokens",
                "length",
                "incomplete",
            )
            assert [len(x.output_ids) for x in recorded] == [3, 3, 3]
            assert all(x.finish_reason == "length" for x in recorded)
        else:
            # bad tool-call JSON is plain text, never a tool call
            assert decoded_a["content"] == [{"type": "text", "text": MALFORMED}]
            assert (decoded_c["content"], decoded_c["tool_calls"]) == (MALFORMED, [])
            assert [i["type"] for i in decoded_r["output"]] == ["message"]
            assert all(x.tags == ["stream", "malformed_output"] for x in recorded)
    finally:
        server.stop()


def test_gzip_bodies_are_decoded_within_the_limit(server: ThreadedProxyServer) -> None:
    info = server.open_session()
    url = info.base_url + "/v1/messages"
    headers = {"content-type": "application/json", "content-encoding": "gzip"}
    r = httpx.post(url, content=gzip.compress(json.dumps(ANTHROPIC).encode()), headers=headers)
    assert r.json()["content"] == [{"type": "text", "text": "done"}]
    bomb = gzip.compress(json.dumps({**ANTHROPIC, "pad": "x" * 100_000}).encode())
    assert len(bomb) < 4000
    r = httpx.post(url, content=bomb, headers=headers)
    assert (r.status_code, r.json()["error"]["type"]) == (413, "request_too_large")
    r = httpx.post(url, content=b"not gzip", headers=headers)
    assert r.status_code == 400 and "not valid gzip" in r.json()["error"]["message"]
    r = httpx.post(url, content=b"{}", headers={**headers, "content-encoding": "zstd"})
    assert r.status_code == 400 and "content-encoding 'zstd'" in r.json()["error"]["message"]
    assert len(server.calls(info.rollout_id)) == 1


def test_stop_returns_while_a_stream_is_in_flight() -> None:
    server = scripted_proxy(["done"], delay_s=60, config=ProxyConfig(keepalive_s=0.2)).start()
    info = server.server.deps.sessions.open("stuck")
    errors: list[BaseException] = []

    def client() -> None:
        try:
            httpx.post(info.base_url + "/v1/messages", json={**ANTHROPIC, "stream": True}, timeout=120)
        except httpx.HTTPError as e:
            errors.append(e)

    thread = threading.Thread(target=client, daemon=True)
    thread.start()
    time.sleep(1.0)
    start = time.monotonic()
    server.stop()
    assert time.monotonic() - start < 15
    thread.join(timeout=15)
    assert not thread.is_alive()
