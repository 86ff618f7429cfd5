"""The proxy's hot-path helpers: what it does before it serves (warm the chat format up, settle the heap
once per process), the per-request header dict, the event loop `harnessrl serve` runs on, SSE encoding."""

from __future__ import annotations

import asyncio
import gc
import sys

import httpx
import pytest

from harnessrl.proxy import server as server_module
from harnessrl.proxy.server import ThreadedProxyServer, run, settle_heap
from harnessrl.proxy.testing import scripted_deps


def test_start_warms_the_chat_format_up() -> None:
    deps = scripted_deps(["done"])
    assert "direct_render" not in vars(deps.fmt)
    server = ThreadedProxyServer(deps).start()
    try:
        settled = vars(deps.fmt)
        assert settled["direct_render"] and settled["local_suffix"] and settled["bare_suffix"]
        info = deps.sessions.open("r0")
        body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
        reply = httpx.post(info.base_url + "/v1/messages", json=body, timeout=30)
        assert reply.status_code == 200 and reply.json()["content"][0]["text"] == "done"
    finally:
        server.stop()


def test_settle_heap_collects_and_freezes_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "_heap_settled", False)
    seen: list[str] = []
    monkeypatch.setattr(gc, "collect", lambda *a: seen.append("collect") or 0)
    monkeypatch.setattr(gc, "freeze", lambda: seen.append("freeze"))
    assert settle_heap()
    assert not settle_heap()
    assert seen == ["collect", "freeze"]


def test_freeze_heap_false_leaves_the_heap_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server_module, "_heap_settled", False)
    monkeypatch.setattr(gc, "freeze", lambda: pytest.fail("froze the heap"))
    server = ThreadedProxyServer(scripted_deps(["done"]))
    server.server.freeze_heap = False
    server.start()
    server.stop()
    assert not server_module._heap_settled


def test_header_dict_is_read_once_first_value_wins() -> None:
    from starlette.requests import Request

    from harnessrl.proxy.app import api_key, header_dict

    raw = [(b"x-app", b"cli"), (b"authorization", b"Bearer tok"), (b"x-app", b"second")]
    headers = header_dict(Request({"type": "http", "headers": raw}))
    assert headers == {"x-app": "cli", "authorization": "Bearer tok"}
    assert api_key(headers) == "tok"


async def _loop_type() -> type:
    return type(asyncio.get_running_loop())


def test_run_serves_on_uvloop_when_it_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    import uvloop

    assert run(_loop_type()) is uvloop.Loop
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` now raises ImportError
    assert issubclass(run(_loop_type()), asyncio.BaseEventLoop)


def test_sse_dumps_is_compact_json_dumps() -> None:
    import json

    from harnessrl.proxy import sse

    obj = {"t": 'héllo \u2028 <tag> "q"', "n": [1, 2.5, -0.0, None, True], "d": {"a": {}}, "e": []}
    assert sse.dumps(obj) == json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    assert sse.event(obj, "x") == f"event: x\ndata: {sse.dumps(obj)}\n\n".encode()
