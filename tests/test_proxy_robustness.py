"""The proxy under hostile or unlucky clients: bodies that break Python's JSON parser, slowloris
headers, too many connections, a huge prompt next to another session's call, clients that give up on
a non-streaming call, and calls the record stage loses. Real uvicorn on 127.0.0.1, scripted engine.
No test waits on a fixed sleep for an outcome: each polls a condition under a generous deadline."""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import openai
import pytest

from harnessrl.config import ProxyConfig
from harnessrl.harnesses import HarnessResult
from harnessrl.proxy.server import ThreadedProxyServer
from harnessrl.proxy.testing import scripted_proxy
from harnessrl.rollout.status import Happened, settle
from harnessrl.types import Rollout, RolloutStatus

ANTHROPIC = {"model": "m", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
RESPONSES = {"model": "m", "input": "hi"}


def wait_for(cond: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


@pytest.fixture(scope="module")
def server() -> Iterator[ThreadedProxyServer]:
    s = scripted_proxy(["done"]).start()
    yield s
    s.stop()


def addr(server: ThreadedProxyServer) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


# -- bodies that break the JSON parser -------------------------------------------------------------------

DEEP = b'{"model": "m", "messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
MIDDLE = b'{"model": "m", "messages": ' + b"[" * 500 + b"]" * 500 + b"}"  # parses, but too deep
HUGE_INT = b'{"model": "m", "max_tokens": ' + b"9" * 5000 + b', "messages": []}'


@pytest.mark.parametrize("body", [DEEP, MIDDLE, HUGE_INT], ids=["deep", "middle", "huge_int"])
def test_deep_json_and_huge_integers_are_400_in_each_api_shape(
    server: ThreadedProxyServer, body: bytes
) -> None:
    info = server.server.deps.sessions.open(f"json-{len(body)}")
    headers = {"content-type": "application/json"}
    a = httpx.post(info.base_url + "/v1/messages", content=body, headers=headers)
    assert (a.status_code, a.json()["type"], a.json()["error"]["type"]) == (
        400,
        "error",
        "invalid_request_error",
    )
    for route in ("/chat/completions", "/responses"):
        r = httpx.post(info.openai_base_url + route, content=body, headers=headers)
        assert (r.status_code, r.json()["error"]["type"]) == (400, "invalid_request_error")
    expected = (
        "request body holds an integer of 5000 digits (at most 4300)"
        if body is HUGE_INT
        else "request body nests deeper than 256 levels"
    )
    assert expected in a.json()["error"]["message"]
    # brackets inside strings do not count
    text = {**ANTHROPIC, "messages": [{"role": "user", "content": "[" * 5000}]}
    assert httpx.post(info.base_url + "/v1/messages", json=text).status_code == 200


NESTED = "[" * 5000 + "]" * 5000
LONG_INT = '{"n": ' + "9" * 5000 + "}"


def _chat_arguments(arguments: str) -> dict[str, Any]:
    call = {"id": "c1", "type": "function", "function": {"name": "exec", "arguments": arguments}}
    return {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
    }


def _responses_arguments(arguments: str) -> dict[str, Any]:
    call = {"type": "function_call", "call_id": "c1", "name": "exec", "arguments": arguments}
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    return {"model": "m", "input": [{"role": "user", "content": "hi"}, call, output]}


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (NESTED, "nests deeper than 256 levels"),
        (LONG_INT, "holds an integer of 5000 digits (at most 4300)"),
        ('{"a": "\\udc00"}', "holds a lone UTF-16 surrogate (surrogates not allowed), not Unicode text"),
    ],
    ids=["nested", "long-int", "lone-surrogate"],
)
@pytest.mark.parametrize("stream", [False, True])
def test_tool_call_arguments_the_decoder_refuses_are_a_400_naming_the_field(
    server: ThreadedProxyServer, arguments: str, reason: str, stream: bool
) -> None:
    """Issue 31.1: a JSON string nested 5,000 deep or a 5,000-digit integer in an assistant turn's
    tool-call arguments was a 500 (RecursionError / ValueError and a traceback) in both OpenAI
    dialects: the body's own limits did not apply to strings decoded again inside it."""
    info = server.server.deps.sessions.open(f"args-{len(arguments)}-{stream}")
    chat = httpx.post(
        info.openai_base_url + "/chat/completions", json=_chat_arguments(arguments) | {"stream": stream}
    )
    field = "messages[1].tool_calls[0].function.arguments"
    error = {"message": f"{field} {reason}", "type": "invalid_request_error", "param": field, "code": None}
    assert (chat.status_code, chat.json()) == (400, {"error": error})
    resp = httpx.post(
        info.openai_base_url + "/responses", json=_responses_arguments(arguments) | {"stream": stream}
    )
    field = "input[1].arguments"
    error = {"message": f"{field} {reason}", "type": "invalid_request_error", "param": field, "code": None}
    assert (resp.status_code, resp.json()) == (400, {"error": error})
    assert server.server.deps.sessions.calls(info.rollout_id) == []  # refused before anything was recorded


# -- connections -----------------------------------------------------------------------------------------


def test_slowloris_headers_are_cut_off_at_the_header_deadline() -> None:
    server = scripted_proxy(["done"], config=ProxyConfig(header_timeout_s=2.0)).start()
    try:
        head = (
            b"POST /v1/messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            + b"x-pad: "
            + b"a" * 100
        )
        start = time.monotonic()
        sent = 0
        with socket.create_connection(addr(server)) as sock:
            sock.settimeout(30)
            try:
                for byte in head:  # one byte a second: the headers would take ~2 minutes
                    sock.sendall(bytes([byte]))
                    sent += 1
                    time.sleep(1.0)
                    if time.monotonic() - start > 60:
                        break
                closed_by_server = sock.recv(1) == b""
            except (ConnectionResetError, BrokenPipeError):
                closed_by_server = True
        elapsed = time.monotonic() - start
        assert closed_by_server
        assert sent < len(head) and elapsed < 30, (sent, elapsed)
        # a normal client on a fresh connection is served
        info = server.server.deps.sessions.open("after")
        assert httpx.post(info.base_url + "/v1/messages", json=ANTHROPIC).status_code == 200
    finally:
        server.stop()


def test_a_trickled_body_gets_408_at_the_body_deadline_and_its_connection_closes() -> None:
    """Headers on time, then a body a byte a second: it held the connection (and a share of
    `max_connections`) for as long as the sandbox lived. Now a 408 at `body_timeout_s`, then closed."""
    server = scripted_proxy(["done"], config=ProxyConfig(body_timeout_s=1.5)).start()
    try:
        info = server.server.deps.sessions.open("slow-body")
        path = info.base_url.split(str(addr(server)[1]), 1)[1] + "/v1/messages"
        head = f"POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n"
        head += "\r\n"
        start = time.monotonic()
        with socket.create_connection(addr(server)) as sock:
            sock.settimeout(30)
            sock.sendall(head.encode() + b"{")
            got = b""
            try:
                for _ in range(20):  # one more byte a second while the server has not answered
                    time.sleep(0.5)
                    sock.sendall(b" ")
                    sock.setblocking(False)
                    try:
                        got += sock.recv(65536)
                    except BlockingIOError:
                        pass
                    sock.setblocking(True)
                    if got:
                        break
                sock.settimeout(10)
                while chunk := sock.recv(65536):
                    got += chunk
            except (ConnectionResetError, BrokenPipeError):
                pass
        elapsed = time.monotonic() - start
        assert got.startswith(b"HTTP/1.1 408"), got[:200]
        assert b"request body not complete within 1.5 s" in got and elapsed < 8, elapsed
        assert server.server.deps.sessions.calls(info.rollout_id) == []
        assert httpx.post(info.base_url + "/v1/messages", json=ANTHROPIC).status_code == 200
    finally:
        server.stop()


def test_connections_past_the_cap_get_503() -> None:
    server = scripted_proxy(["done"], config=ProxyConfig(max_connections=2)).start()
    idle: list[socket.socket] = []
    try:
        info = server.server.deps.sessions.open("cap")
        for _ in range(2):
            idle.append(socket.create_connection(addr(server)))
        wait_for(lambda: httpx.post(info.base_url + "/v1/messages", json=ANTHROPIC).status_code == 503)
        for sock in idle:
            sock.close()
        idle.clear()
        wait_for(lambda: httpx.post(info.base_url + "/v1/messages", json=ANTHROPIC).status_code == 200)
    finally:
        for sock in idle:
            sock.close()
        server.stop()


# -- a huge prompt does not stall other sessions ------------------------------------------------------------


def test_a_capped_huge_prompt_gets_its_error_while_another_session_is_served() -> None:
    server = scripted_proxy(["done"], config=ProxyConfig(max_prompt_tokens=100_000)).start()
    deps = server.server.deps
    started, release = threading.Event(), threading.Event()
    real = deps.build_prompt

    def gated(fmt: Any, messages: Any, tools: Any, history: Any) -> Any:
        if len(messages[-1].content) > 100_000:  # the huge request: hold it until the small one is done
            started.set()
            release.wait(timeout=120)
        return real(fmt, messages, tools, history)

    deps.build_prompt = gated
    result: dict[str, httpx.Response] = {}
    big, small = deps.sessions.open("big"), deps.sessions.open("small")
    body = {**ANTHROPIC, "messages": [{"role": "user", "content": "lorem ipsum " * 100_000}]}  # 1.2 MB

    def send_big() -> None:
        result["big"] = httpx.post(big.base_url + "/v1/messages", json=body, timeout=180)

    thread = threading.Thread(target=send_big, daemon=True)
    thread.start()
    try:
        assert started.wait(timeout=120)
        # rendering the big one runs in a worker thread: the event loop still serves this call
        r = httpx.post(small.base_url + "/v1/messages", json=ANTHROPIC, timeout=60)
        assert r.json()["content"] == [{"type": "text", "text": "done"}]
    finally:
        release.set()
        thread.join(timeout=180)
        server.stop()
    r = result["big"]
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    assert r.json()["error"]["message"].startswith("prompt is too long: ")
    assert "> 100000 maximum (proxy.max_prompt_tokens is 100000;" in r.json()["error"]["message"]


def test_a_prompt_too_long_to_tokenize_is_refused_from_its_length() -> None:
    server = scripted_proxy(["done"], config=ProxyConfig(max_prompt_tokens=1000)).start()
    try:
        info = server.server.deps.sessions.open("chars")
        body = {**CHAT, "messages": [{"role": "user", "content": "x" * 64_000}]}
        r = httpx.post(info.openai_base_url + "/chat/completions", json=body)
        err = r.json()["error"]
        assert (r.status_code, err["code"], err["param"]) == (400, "context_length_exceeded", "messages")
        assert err["message"].startswith(
            "This model's maximum context length is 1000 tokens. However, your messages resulted in 2000 "
            "tokens. Please reduce the length of the messages. (64000 characters, so at least 2000 tokens; "
            "proxy.max_prompt_tokens is 1000;"
        )
    finally:
        server.stop()


@pytest.mark.security
def test_tool_text_and_count_tokens_are_bounded_before_tokenizing_too() -> None:
    """The character bound counted message text only, and `count_tokens` skipped it: a 15 MB tool
    description (or count_tokens body) was tokenized whole, 20 s of CPU and 9.5 GB at peak for a
    string of digits (a token per character). Both are refused from their length now."""
    server = scripted_proxy(["done"], config=ProxyConfig(max_prompt_tokens=1000)).start()
    try:
        info = server.server.deps.sessions.open("tools")
        tool = {"name": "t", "description": "7" * 64_000, "input_schema": {"type": "object"}}
        for path in ("/v1/messages", "/v1/messages/count_tokens"):
            r = httpx.post(info.base_url + path, json={**ANTHROPIC, "tools": [tool]}, timeout=60)
            err = r.json()["error"]
            assert (r.status_code, err["type"]) == (400, "invalid_request_error"), path
            assert (
                "(64021 characters, so at least 2000 tokens; proxy.max_prompt_tokens is 1000"
                in err["message"]
            )
        r = httpx.post(info.base_url + "/v1/messages/count_tokens", json=ANTHROPIC, timeout=60)
        assert r.status_code == 200 and r.json()["input_tokens"] > 0
    finally:
        server.stop()


async def test_heavy_bodies_are_prepared_a_few_at_a_time() -> None:
    """Bodies of `limits.HEAVY_CHARS` bytes and more wait for `ProxyDeps.heavy`; smaller ones do not."""
    import asyncio

    from harnessrl.proxy.handler import in_thread
    from harnessrl.proxy.limits import HEAVY_CHARS
    from harnessrl.proxy.testing import scripted_deps

    deps = scripted_deps(["done"])
    deps.heavy = asyncio.Semaphore(1)
    async with deps.heavy:  # another heavy body is being prepared
        heavy = asyncio.ensure_future(in_thread(deps, b"x" * HEAVY_CHARS, lambda: "heavy"))
        assert await in_thread(deps, b"x" * (HEAVY_CHARS - 1), lambda: "large") == "large"
        await asyncio.sleep(0.05)
        assert not heavy.done()
    assert await heavy == "heavy"


# -- non-streaming clients that give up ------------------------------------------------------------------


def test_non_streaming_calls_of_a_client_that_timed_out_are_partial() -> None:
    # the engine takes 10 s; the SDK gives up after 0.5 s and retries once: neither answer is delivered
    server = scripted_proxy(["done"], delay_s=10.0).start()
    try:
        sessions = server.server.deps.sessions
        info = sessions.open("gave-up")
        client = openai.OpenAI(base_url=info.openai_base_url, api_key=info.token, timeout=0.5, max_retries=1)
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        recorded = wait_for(lambda: len(sessions.calls("gave-up")) == 2 and sessions.calls("gave-up"), 120)
        assert [(c.partial, c.text) for c in recorded] == [(True, "done"), (True, "done")]
        assert recorded[1].replay_of == recorded[0].call_id  # the retry replayed, nothing re-sampled
        # a client that waits gets its answer, not partial
        patient = openai.OpenAI(base_url=info.openai_base_url, api_key=info.token, timeout=120, max_retries=0)
        done = patient.chat.completions.create(model="m", messages=[{"role": "user", "content": "again"}])
        assert done.choices[0].message.content == "done"
        assert sessions.calls("gave-up")[2].partial is False
    finally:
        server.stop()


def _disconnect(port: int, token: str, body: bytes, stop: Callable[[socket.socket], None]) -> None:
    """One raw HTTP/1.1 client: send a chat request (`body` may be shorter than it says), `stop`, close."""
    head = (
        f"POST /r/{token}/v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"content-length: {len(json.dumps(CHAT)) + 200}\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(30)
        sock.sendall(head.encode() + body)
        stop(sock)


def test_each_client_disconnect_is_one_debug_line(caplog: pytest.LogCaptureFixture) -> None:
    """Issue 31.4: a client that went away while sending its body logged an "unhandled error" with a
    traceback (noise a client can multiply). Going away at any point (mid-body, while a non-streaming
    turn is generated, mid-stream after the head and keep-alives) is one debug line, nothing above."""
    caplog.set_level(logging.DEBUG, logger="harnessrl.proxy")
    server = scripted_proxy(["done"], delay_s=0.6).start()
    try:
        server.server.deps.config.keepalive_s = 0.1
        info = server.server.deps.sessions.open("gone")
        port = server.server.port
        whole = json.dumps(CHAT).encode()
        body = whole + b" " * 200  # exactly the declared length
        streamed = json.dumps({**CHAT, "stream": True, "messages": [{"role": "user", "content": "s"}]})
        streamed_body = streamed.encode().ljust(len(whole) + 200)
        _disconnect(port, info.token, whole[:20], lambda sock: time.sleep(0.2))  # mid-body
        _disconnect(port, info.token, body, lambda sock: time.sleep(0.2))  # while generating
        _disconnect(port, info.token, streamed_body, lambda sock: sock.recv(1))  # mid-stream
        gone = wait_for(lambda: len(_went_away(caplog)) >= 3 and _went_away(caplog))
        time.sleep(0.5)  # anything else it would log comes now
        assert [r.getMessage().split(" call ")[0] for r in gone] == [
            "client went away while sending its request to /v1/chat/completions",
            "client went away while",
            "client went away while",
        ]
        assert sorted(r.getMessage().rsplit(" ", 1)[1] for r in gone[1:]) == ["generated", "streamed"]
        loud = [
            r
            for r in caplog.records
            if r.levelno > logging.DEBUG and r.name.startswith(("harnessrl", "uvicorn"))
        ]
        assert loud == []
        calls = wait_for(
            lambda: (
                len(server.server.deps.sessions.calls("gone")) == 2
                and server.server.deps.sessions.calls("gone")
            )
        )
        assert [c.partial for c in calls] == [True, True]
    finally:
        server.stop()


def _went_away(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("client went away")]


# -- calls the record stage loses ------------------------------------------------------------------------


def test_lost_calls_are_counted_and_the_rollout_is_an_engine_error() -> None:
    server = scripted_proxy(["done"]).start()
    try:
        sessions = server.server.deps.sessions
        info = sessions.open("lossy")
        session = sessions._by_rollout["lossy"]

        def broken(call: Any) -> None:
            raise OSError("disk full")

        session.record = broken  # type: ignore[method-assign]
        r = httpx.post(info.base_url + "/v1/messages", json=ANTHROPIC)
        assert r.json()["content"] == [{"type": "text", "text": "done"}]  # serving goes on
        assert sessions.dropped("lossy") == 1
        closed = server.call(_close(sessions, "lossy"))
        assert (list(closed), closed.dropped) == ([], 1)
    finally:
        server.stop()
    rollout = Rollout(rollout_id="lossy", task_id="t", harness="claude-code")
    settle(rollout, Happened(result=HarnessResult(ok=True, exit_code=0), calls=[], dropped=closed.dropped))
    assert (rollout.status, rollout.fault, rollout.status_reason) == (
        RolloutStatus.ENGINE_ERROR,
        "policy",  # what broke recording came over the rollout's endpoint: trained as a 0, not dropped
        "1 calls could not be recorded (see the proxy's log)",
    )
    whole = Rollout(rollout_id="whole", task_id="t", harness="claude-code")
    settle(whole, Happened(result=HarnessResult(ok=True, exit_code=0), calls=[], dropped=0))
    assert whole.status is RolloutStatus.OK


async def _close(sessions: Any, rollout_id: str) -> Any:
    return sessions.close(rollout_id)


def test_body_json_stays_valid_after_the_depth_scan(server: ThreadedProxyServer) -> None:
    info = server.server.deps.sessions.open("escapes")
    tricky = {**ANTHROPIC, "messages": [{"role": "user", "content": '\\"[[[' + "{" * 300 + '"'}]}
    r = httpx.post(
        info.base_url + "/v1/messages",
        content=json.dumps(tricky).encode(),
        headers={"content-type": "application/json"},
    )
    assert r.status_code == 200


# -- one rollout's calls in flight -----------------------------------------------------------------------


def test_one_rollout_cannot_fill_the_engine_with_calls() -> None:
    """The engine's batch is shared: past `proxy.max_calls_in_flight` a rollout's calls get 429 in its
    API's shape (its client retries), and another rollout's call still goes through."""
    server = scripted_proxy(["done"], delay_s=3.0, config=ProxyConfig(max_calls_in_flight=2)).start()
    try:
        sessions = server.server.deps.sessions
        greedy, other = sessions.open("greedy"), sessions.open("other")
        codes: list[int] = []

        def call(base: str) -> None:
            codes.append(httpx.post(base + "/v1/messages", json=ANTHROPIC, timeout=60).status_code)

        threads = [threading.Thread(target=call, args=(greedy.base_url,)) for _ in range(2)]
        for t in threads:
            t.start()
        wait_for(lambda: len(sessions._by_rollout["greedy"].in_flight) == 2)
        refused = httpx.post(greedy.base_url + "/v1/messages", json=ANTHROPIC, timeout=60)
        assert refused.status_code == 429 and refused.json()["type"] == "error"
        assert "max_calls_in_flight" in refused.json()["error"]["message"]
        assert httpx.post(other.base_url + "/v1/messages", json=ANTHROPIC, timeout=60).status_code == 200
        for t in threads:
            t.join()
        assert codes == [200, 200]
    finally:
        server.stop()


@pytest.mark.security
def test_a_rollouts_recorded_tokens_are_bounded() -> None:
    """Every recorded call keeps its whole prompt, and a re-sent body is a replay (no engine work):
    one rollout's commands re-sending a 250k-token body grew the proxy by 2 GB and its journal by
    715 MB in 20 s. Past `proxy.max_rollout_tokens` its calls get a 400 (recorded nothing more);
    another rollout's still go through."""
    server = scripted_proxy(["done"], config=ProxyConfig(max_rollout_tokens=60)).start()
    try:
        sessions = server.server.deps.sessions
        greedy, other = sessions.open("greedy"), sessions.open("other")
        codes = [httpx.post(greedy.base_url + "/v1/messages", json=ANTHROPIC, timeout=60) for _ in range(6)]
        statuses = [r.status_code for r in codes]
        held = sessions._by_rollout["greedy"]
        calls = len(held.calls)
        assert 0 < calls < 6 and statuses == [200] * calls + [400] * (6 - calls)
        per_call = held.recorded_tokens // calls  # the same body each time
        assert held.recorded_tokens - per_call < 60 <= held.recorded_tokens  # the last began under it
        message = codes[-1].json()["error"]["message"]
        assert message == (
            f"this rollout's {calls} recorded calls hold {held.recorded_tokens} tokens "
            "(proxy.max_rollout_tokens is 60): no further calls"
        )
        assert httpx.post(other.base_url + "/v1/messages", json=ANTHROPIC, timeout=60).status_code == 200
    finally:
        server.stop()


def test_only_a_lone_surrogate_is_refused() -> None:
    """An escaped pair (an emoji from a client that escapes non-ASCII) is one character and passes
    without re-encoding the body; a half alone, high or low, is a 400."""
    from harnessrl.proxy.body import parse_body
    from harnessrl.types import RequestError

    assert parse_body(b'{"a": "\\uD83D\\ude00 \\u00e9"}', "application/json") == {"a": "\U0001f600 \u00e9"}
    for lone in (b'{"a": "x\\ud83d"}', b'{"a": "\\udE00y"}', b'{"a": "\\ud83d\\ud83d"}'):
        with pytest.raises(RequestError, match="lone UTF-16 surrogate"):
            parse_body(lone, "application/json")


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": [1, 2.5, -0, 1e308, "\\u00e9\\n", null, true], "b": {"c": {}}}',
        b'{"a": 1, "a": 2}',  # the last duplicate wins in both
        b'{"t": NaN, "u": -Infinity}',  # json takes these; orjson does not
        b'{"seed": 123456789012345678901234567890}',  # past 64 bits: orjson refuses
        '{"a": "\u00e9"}'.encode("utf-16"),  # json detects UTF-16; orjson reads UTF-8 only
        b'\xef\xbb\xbf{"a": 1}',  # a UTF-8 byte-order mark: json refuses it, so must parse_body
        b'{"a": ' + b"[" * 1100 + b"]" * 1100 + b"}",  # deeper than orjson's 1,024 levels
    ],
)
def test_the_fast_json_path_decides_nothing_json_would_decide_differently(raw: bytes) -> None:
    """`parse_body` decodes through orjson where it can and through json otherwise: the same value,
    or the same refusal with json's own wording, as `json.loads` (then the proxy's own checks)."""
    import math

    from harnessrl.formats.untrusted_json import MAX_INT_DIGITS, _decode
    from harnessrl.proxy.body import parse_body
    from harnessrl.types import RequestError

    def _loads(raw: bytes) -> object:
        return _decode(raw, MAX_INT_DIGITS)

    try:
        want = json.loads(raw)
    except (ValueError, RecursionError) as e:
        with pytest.raises(type(e)):
            _loads(raw)
        with pytest.raises(RequestError):
            parse_body(raw, "application/json")
        return
    got = _loads(raw)
    assert json.dumps(got, allow_nan=True) == json.dumps(want, allow_nan=True)
    if "t" in want:
        assert math.isnan(got["t"]) and got["u"] == -math.inf
    try:
        assert parse_body(raw, "application/json") == want or "t" in want
    except RequestError as e:
        assert "nests deeper" in str(e)  # the proxy's own depth limit, as before


def test_tool_digest_is_stable_and_tells_tool_sets_apart() -> None:
    from harnessrl.proxy.capture import tools_digest
    from harnessrl.types import ToolSpec

    a = [ToolSpec(name="Bash", description="run \u00e9", parameters={"type": "object", "properties": {}})]
    b = [ToolSpec(name="Bash", description="run e", parameters={"type": "object", "properties": {}})]
    odd = [ToolSpec(name="Bash", description="x\ud800", parameters={})]  # orjson refuses: json's text
    assert tools_digest(a) == tools_digest(list(a)) != tools_digest(b)
    assert len(tools_digest(odd)) == 16 and tools_digest(odd) != tools_digest(b)
    assert tools_digest([]) != tools_digest(b)
