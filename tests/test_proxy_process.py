"""A proxy process (`proxy.process.ProxyProcess`, `python -m harnessrl.proxy.node`): the proxy of this
package in a process of its own, calling the engine through the engine server. Its calls are the
in-process proxy's (splices, retry replay, log-probs, weights version, digests); they reach the parent
through the journal in the rollout's folder; a killed process ends its sessions at once with the
calls it had journaled and its in-flight generation cancelled, and the next session starts a new one
on the same port; a token lives only in its own process's sessions; its heap is its own."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from test_engine_server import Recording, scorer

from harnessrl.engines.serve import EngineServer
from harnessrl.proxy.node import NodeSpec
from harnessrl.proxy.process import ProxyProcess
from harnessrl.proxy.server import ProxyServer
from harnessrl.proxy.testing import scripted_deps
from harnessrl.types import ModelCall

CHAT = "/v1/chat/completions"
FIRST = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "say hi"}]}


def second(first_reply: dict[str, Any]) -> dict[str, Any]:
    """The conversation after the first answer: it splices onto the first call."""
    said = first_reply["choices"][0]["message"]["content"]
    return {**FIRST, "messages": [*FIRST["messages"], {"role": "assistant", "content": said},
                                  {"role": "user", "content": "again"}]}  # fmt: skip


async def conversation(base: str) -> list[int]:
    """Two calls (the second spliced) and a retry of the second (replayed): the status codes."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        one = await client.post(CHAT, json=FIRST)
        two = await client.post(CHAT, json=second(one.json()))
        retry = await client.post(CHAT, json=second(one.json()), headers={"x-stainless-retry-count": "1"})
    return [one.status_code, two.status_code, retry.status_code]


def same_fields(c: ModelCall) -> tuple[Any, ...]:
    """What must be identical between the proxy in process and a proxy process (ids and times differ)."""
    return (c.index, c.prompt_ids, c.output_ids, c.output_logprobs, c.finish_reason, c.render, c.text, c.tags,
            c.weights_version, c.model_id, c.tokenizer, c.tokenizer_digest, c.request_digest, c.system_digest,
            c.replay_of is not None, c.spliced_from is not None)  # fmt: skip


@pytest.fixture
async def served() -> AsyncIterator[tuple[Recording, EngineServer]]:
    engine = Recording()
    async with EngineServer(engine) as server:
        yield engine, server


@pytest.fixture
async def proxy(served: tuple[Recording, EngineServer]) -> AsyncIterator[ProxyProcess]:
    """A proxy process calling the served engine (stopped at the end)."""
    _, server = served
    process = ProxyProcess(NodeSpec(engine_url=server.url, engine_token=server.token))
    yield process
    await process.stop()


async def test_calls_through_a_proxy_process_are_the_in_process_ones(
    served: tuple[Recording, EngineServer], proxy: ProxyProcess, tmp_path: Path
) -> None:
    engine, _ = served
    opened = await proxy.open("r0", seed=5, journal=tmp_path / "r0" / "calls.jsonl")
    codes = await conversation(f"{opened.server_url}/r/{opened.token}")
    journaled = (tmp_path / "r0" / "calls.jsonl").read_text().splitlines()
    stats = await proxy.stats()
    remote = await proxy.close("r0")
    deps = scripted_deps(["hello there", "and again"], scorer=scorer)
    async with ProxyServer(deps, port=0):
        info = deps.sessions.open("r0", seed=5)
        assert await conversation(info.base_url) == codes == [200, 200, 200]
        local = deps.sessions.close("r0")
    assert [same_fields(c) for c in remote] == [same_fields(c) for c in local]
    assert [c.render for c in remote] == ["rendered", "spliced", "spliced"]
    assert "retry_replay" in remote[2].tags and remote[0].output_logprobs[0] < 0
    assert remote.dropped == 0 and len(journaled) == 3  # each call was journaled as it was recorded
    assert [json.loads(line)["call_id"] for line in journaled] == [c.call_id for c in remote]
    assert stats["requests"] == 3 and stats["sessions"] == 1 and stats["pid"] != os.getpid()
    assert engine.calls == 2  # the retry was replayed, not sampled again


async def test_a_killed_proxy_process_ends_its_sessions_with_their_journaled_calls(
    served: tuple[Recording, EngineServer], proxy: ProxyProcess, tmp_path: Path
) -> None:
    engine, server = served
    opened = await proxy.open("r0", journal=tmp_path / "r0" / "calls.jsonl")
    other = await proxy.open("r1", journal=tmp_path / "r1" / "calls.jsonl")
    base = f"{opened.server_url}/r/{opened.token}"
    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        one = await client.post(CHAT, json=FIRST)
        engine.gate = asyncio.Event()  # the next call waits in the engine
        pending = asyncio.ensure_future(client.post(CHAT, json=second(one.json())))
        while engine.calls < 1 or len(engine.seen) < 2:
            await asyncio.sleep(0.01)
        port, pid = proxy.endpoint[1], proxy.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await asyncio.wait_for(opened.ended.wait(), 30)
        with pytest.raises(httpx.HTTPError):
            await pending
    for _ in range(500):  # the dead process's engine call was cancelled
        if server.cancelled:
            break
        await asyncio.sleep(0.01)
    kept, nothing = await proxy.close("r0"), await proxy.close("r1")
    assert opened.lost == other.lost == f"proxy process {pid} exited with code -9"
    assert other.ended.is_set() and proxy.deaths == 1
    assert [c.text for c in kept] == ["hello there"] and kept.dropped == 0 and list(nothing) == []
    assert (server.cancelled, engine.cancelled) == (1, 1)
    engine.gate.set()
    again = await proxy.open("r2", journal=tmp_path / "r2" / "calls.jsonl")  # a new process, same port
    assert proxy.pid not in (None, pid) and proxy.endpoint[1] == port
    async with httpx.AsyncClient(base_url=f"{again.server_url}/r/{again.token}", timeout=60) as client:
        assert (await client.post(CHAT, json=FIRST)).status_code == 200
    assert len(await proxy.close("r2")) == 1


async def test_a_token_lives_only_in_its_own_process_and_session(
    served: tuple[Recording, EngineServer], tmp_path: Path
) -> None:
    _, server = served
    spec = NodeSpec(engine_url=server.url, engine_token=server.token)
    first, second_proxy = ProxyProcess(spec), ProxyProcess(spec)
    try:
        a = await first.open("a", journal=tmp_path / "a" / "calls.jsonl")
        b = await second_proxy.open("b", journal=tmp_path / "b" / "calls.jsonl")
        async with httpx.AsyncClient(timeout=60) as client:
            own = await client.post(f"{a.server_url}/r/{a.token}{CHAT}", json=FIRST)
            crossed = await client.post(f"{b.server_url}/r/{a.token}{CHAT}", json=FIRST)
            as_key = await client.post(
                f"{b.server_url}{CHAT}", json=FIRST, headers={"authorization": f"Bearer {a.token}"}
            )
            await first.close("a")
            after = await client.post(f"{a.server_url}/r/{a.token}{CHAT}", json=FIRST)
        await second_proxy.close("b")
    finally:
        await asyncio.gather(first.stop(), second_proxy.stop())
    assert a.server_url != b.server_url
    assert [own.status_code, crossed.status_code, as_key.status_code, after.status_code] == [
        200,
        401,
        401,
        401,
    ]


async def test_an_overflowing_call_ends_the_session_not_the_process(tmp_path: Path) -> None:
    engine = Recording()
    engine.max_context = 64
    async with EngineServer(engine) as server:
        proxy = ProxyProcess(NodeSpec(engine_url=server.url, engine_token=server.token))
        try:
            opened = await proxy.open("r0", journal=tmp_path / "r0" / "calls.jsonl")
            long = {**FIRST, "messages": [{"role": "user", "content": "word " * 200}]}
            async with httpx.AsyncClient(base_url=f"{opened.server_url}/r/{opened.token}", timeout=60) as c:
                reply = await c.post(CHAT, json=long)
            await asyncio.wait_for(opened.ended.wait(), 30)
            calls = await proxy.close("r0")
        finally:
            await proxy.stop()
    assert reply.status_code == 400 and opened.lost is None
    assert len(calls) == 1 and "context_overflow" in calls[0].tags and engine.calls == 0
