"""The driver's engine over HTTP (`engines.serve.EngineServer`) and the client proxy processes call it
with (`engines.remote.RemoteEngine`): exact ids, log-probs, sampling parameters and weights version
through the wire; the run's token on every request; a client that goes away cancels its generation;
an engine that is gone is an EngineError; where the server binds."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest

from harnessrl.chat.format import ChatFormat
from harnessrl.chat.tokenizers import qwen3_tokenizer
from harnessrl.config import Config
from harnessrl.engines.remote import RemoteEngine
from harnessrl.engines.scripted import ScriptedEngine
from harnessrl.engines.serve import EngineServer
from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.rollout.serving import engine_address
from harnessrl.types import ChatMessage, EngineError


def scorer(prompt_ids: list[int], output_ids: list[int]) -> list[float]:
    """Deterministic, distinct log-probs (the wire must carry them exactly)."""
    return [-((t % 97) + 1) / 37.0 - len(prompt_ids) / 1e6 for t in output_ids]


class Recording(ScriptedEngine):
    """Remembers the sampling parameters of each call; `gate` holds calls until it is set."""

    def __init__(self) -> None:
        super().__init__(ChatFormat(qwen3_tokenizer()), ["hello there", "and again"], scorer=scorer)
        self.seen: list[SamplingParams] = []
        self.gate: asyncio.Event | None = None
        self.cancelled = 0

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
        self.seen.append(sampling)
        if self.gate is not None:
            try:
                await self.gate.wait()
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        return await super().generate(prompt_ids, sampling)


def prompt(engine: ScriptedEngine) -> list[int]:
    return engine.fmt.render([ChatMessage(role="user", content="say hi")], [])


async def test_remote_generate_is_the_engine_exactly() -> None:
    engine = Recording()
    engine.max_context = 4096
    sampling = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=2, stop_token_ids=(151645, 7), seed=11)
    async with EngineServer(engine) as server:
        remote = await RemoteEngine.connect(server.url, server.token)
        assert (remote.model_id, remote.max_context, remote.weights_version) == ("scripted", 4096, 0)
        assert (
            remote.info.tokenizer == "qwen3"
            and remote.tokenizer.name_or_path == qwen3_tokenizer().name_or_path
        )
        got = await remote.generate(prompt(engine), sampling)
        engine.weights_version = 3  # the driver pushed weights: the next answer says so
        again = await remote.generate(prompt(engine), sampling)
        await remote.close()
    direct = await Recording().generate(prompt(engine), sampling)
    assert got.output_ids == direct.output_ids == [14990, 1052]
    assert got.output_logprobs == direct.output_logprobs == scorer(prompt(engine), [14990, 1052])
    assert got.finish_reason == direct.finish_reason == "length"
    assert got.meta == {"script": 0, "turn": 0, "call": 0, "weights_version": 0}
    assert again.meta["weights_version"] == 3 and remote.weights_version == 3
    assert engine.seen == [sampling, sampling]  # temperature, top-p, cap, stop ids and seed arrive as sent
    assert server.served == {"127.0.0.1": 2}


async def test_every_request_needs_the_run_token() -> None:
    engine = Recording()
    async with EngineServer(engine) as server:
        body = {"prompt_ids": prompt(engine), "sampling": {"temperature": 1.0, "top_p": 1.0, "max_tokens": 2,
                                                           "stop_token_ids": [], "seed": None}}  # fmt: skip
        async with httpx.AsyncClient(base_url=server.url) as client:
            codes = [
                (await client.get("/v1/engine")).status_code,
                (await client.post("/v1/engine/generate", json=body)).status_code,
                (
                    await client.post("/v1/engine/generate", json=body, headers={"authorization": "Bearer x"})
                ).status_code,
                (
                    await client.post(
                        "/v1/engine/generate", json=body, headers={"authorization": server.token}
                    )
                ).status_code,
            ]
            ok = await client.post(
                "/v1/engine/generate", json=body, headers={"authorization": f"Bearer {server.token}"}
            )
            bad = await client.post(
                "/v1/engine/generate",
                json={**body, "prompt_ids": ["x"]},
                headers={"authorization": f"Bearer {server.token}"},
            )
        with pytest.raises(EngineError, match="401"):
            await RemoteEngine.connect(server.url, "not-the-token")
    assert codes == [401, 401, 401, 401] and server.refused == 5
    assert ok.status_code == 200 and ok.json()["output_ids"] == [14990, 1052]
    assert bad.status_code == 400 and "prompt_ids" in bad.json()["error"]
    assert engine.calls == 1  # nothing refused reached the engine
    assert len(server.token) >= 43  # 32 random bytes


async def test_a_client_that_goes_away_cancels_its_generation() -> None:
    engine = Recording()
    engine.gate = asyncio.Event()
    async with EngineServer(engine) as server:
        remote = await RemoteEngine.connect(server.url, server.token)
        call = asyncio.ensure_future(remote.generate(prompt(engine), SamplingParams(max_tokens=2)))
        while not engine.seen:
            await asyncio.sleep(0.01)
        call.cancel()
        for _ in range(500):
            if server.cancelled:
                break
            await asyncio.sleep(0.01)
        assert (server.cancelled, engine.cancelled) == (1, 1)
        engine.gate.set()
        assert (await remote.generate(prompt(engine), SamplingParams(max_tokens=2))).output_ids == [
            14990,
            1052,
        ]
        await remote.close()


async def test_an_engine_that_fails_or_is_gone_is_an_engine_error() -> None:
    engine = ScriptedEngine(ChatFormat(qwen3_tokenizer()), ["hi"], fault_calls={0})
    server = EngineServer(engine)
    await server.start()
    remote = await RemoteEngine.connect(server.url, server.token)
    with pytest.raises(EngineError, match="answered 500: EngineError: injected fault on call 0"):
        await remote.generate(prompt(engine), SamplingParams(max_tokens=2))
    await server.stop()
    with pytest.raises(EngineError, match=r"unreachable|connection"):
        await remote.generate(prompt(engine), SamplingParams(max_tokens=2))
    await remote.close()


def address(**sections: Any) -> tuple[str, str]:
    cfg = Config.model_validate(sections)
    node = "10.9.0.4" if cfg.rollout.backend == "ray" else None
    return engine_address(cfg.rollout, cfg.proxy, node)


def test_the_engine_server_binds_a_private_interface_by_default() -> None:
    assert address(proxy={"processes": 2}) == ("127.0.0.1", "127.0.0.1")
    assert address(rollout={"backend": "ray"}) == ("127.0.0.1", "127.0.0.1")  # a local cluster
    joined = {"backend": "ray", "ray": {"address": "10.9.0.4:6379"}}
    assert address(rollout=joined) == ("10.9.0.4", "10.9.0.4")  # the cluster's network, not 0.0.0.0
    assert address(rollout=joined, proxy={"engine_host": "0.0.0.0"}) == ("0.0.0.0", "10.9.0.4")
    advertised = {**joined, "ray": {**joined["ray"], "advertise_host": "10.9.9.9"}}
    assert address(rollout=advertised, proxy={"engine_host": "10.9.0.4"}) == ("10.9.0.4", "10.9.9.9")
