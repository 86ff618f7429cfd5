"""The vLLM engine: the `Engine` protocol over a vLLM OpenAI-compatible server, managed or existing.

    engine = VLLMEngine.from_config(cfg.engine)       # engine.type = "vllm"
    result = await engine.generate(prompt_ids, SamplingParams(max_tokens=64, stop_token_ids=(2,)))
    await engine.update_weights(trainer.weights())     # reload in place, no restart

vLLM runs in its own environment (another torch and transformers pin), so this process never imports
it: it talks HTTP on the server's completions API. Two modes (`EngineConfig.vllm.url`):

- managed (url unset): `vllm_server.VLLMServer` starts `vllm serve` on `cfg.model`'s HF folder
  (`default` = the converted SmolLM2 checkpoint of `models.default_checkpoint`) on 127.0.0.1 as a
  child process group, with prefix caching on and sampling log-probs after temperature; `close()`
  stops it.
- server mode (url set): a server someone already runs; it must serve the same tokenizer, and for
  temperature != 1 it must run with `--logprobs-mode processed_logprobs` (else the log-probs ignore
  the temperature) and `--generation-config vllm` (else the model's generation_config.json sets
  defaults such as top_k).

One generation is one `POST /v1/completions` with the prompt as token ids, `logprobs: 0` (the sampled
token's log-prob only), `return_token_ids` (exact ids, nothing re-tokenised), `stop_token_ids` (vLLM
keeps the stop token in `token_ids`), `ignore_eos` (only our stop ids stop, as in the embedded engine),
and explicit top_k / min_p / penalties so no server default changes the distribution. Concurrent
calls are concurrent HTTP requests; vLLM batches them (continuous batching). `meta` carries
`weights_version`, `prompt_tokens` and `cached_tokens` (the server's prefix-cache hits).

Weights (`weight_sync = "reload"`): `update_weights` closes the gate to new calls, waits for the calls
in flight, writes the state dict as `<weights_dir>/v<N>/model.safetensors` (tied weights written once,
in the engine dtype), asks every vLLM worker to reload from that folder
(`POST /collective_rpc {"method": "reload_weights", "kwargs": {"weights_path": ...}}`, the dev endpoint
behind `VLLM_SERVER_DEV_MODE=1`), drops the prefix cache (`POST /reset_prefix_cache`: its keys and
values were computed with the old weights), bumps `weights_version`, and opens the gate. The file
goes through the filesystem, so a server on another machine needs `weights_dir` on shared storage.

LoRA adapters (vLLM's documented runtime path): `load_lora_adapter(name, folder)` posts to
`/v1/load_lora_adapter` (in place when the name is loaded already) and later calls sample from the
adapter; the server needs `--enable-lora` and `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True` (managed mode:
`engine.vllm.enable_lora`). The folder is a PEFT adapter (`PeftModel.save_pretrained`).

Left out: NCCL weight broadcast (vLLM's `/init_weight_transfer_engine` family; a GPU-to-GPU path
for large models on one node), streaming, and several samples per request (`n`): GRPO siblings are
separate requests, which the prefix cache serves from one prefill.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

import httpx

from harnessrl.engines.config import EngineConfig
from harnessrl.engines.vllm_server import SERVED_NAME, ServerSpec, VLLMServer, default_vllm_python
from harnessrl.protocols import GenerationResult, SamplingParams
from harnessrl.types import EngineError, FinishReason

_FINISH: dict[str, FinishReason] = {"stop": "stop", "length": "length"}


def completion_body(model: str, prompt_ids: list[int], sampling: SamplingParams) -> dict[str, Any]:
    """The `/v1/completions` request for one generation (see the module docstring for each field)."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": list(prompt_ids),
        "max_tokens": sampling.max_tokens,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "top_k": 0,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "frequency_penalty": 0.0,
        "presence_penalty": 0.0,
        "logprobs": 0,
        "return_token_ids": True,
        "stop_token_ids": list(sampling.stop_token_ids),
        "ignore_eos": True,
        "skip_special_tokens": False,
    }
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    return body


def parse_completion(data: dict[str, Any]) -> tuple[list[int], list[float], FinishReason, int]:
    """(output ids, their log-probs, finish reason, cached prompt tokens) of a completions response."""
    try:
        choice = data["choices"][0]
        ids = [int(t) for t in choice["token_ids"]]
        logprobs = [float(x) for x in choice["logprobs"]["token_logprobs"]]
        reason = choice.get("finish_reason")
    except (KeyError, IndexError, TypeError, ValueError) as e:
        raise EngineError(f"unexpected vLLM completions response ({e!r}): {str(data)[:300]}") from None
    if len(ids) != len(logprobs):
        raise EngineError(f"vLLM returned {len(ids)} token ids but {len(logprobs)} log-probs")
    if reason not in _FINISH:
        raise EngineError(f"vLLM finished with {reason!r}")
    details = (data.get("usage") or {}).get("prompt_tokens_details") or {}
    return ids, logprobs, _FINISH[reason], int(details.get("cached_tokens") or 0)


def write_safetensors(state_dict: dict[str, Any], folder: Path, dtype: str) -> Path:
    """Write a state dict as `folder/model.safetensors` in `dtype`; a tensor shared under two names
    (tied embeddings) is written once, under its first name (vLLM re-ties it on load)."""
    import torch
    from safetensors.torch import save_file

    from harnessrl.engines.models import DTYPES

    folder.mkdir(parents=True, exist_ok=True)
    seen: set[tuple[int, int]] = set()
    out: dict[str, torch.Tensor] = {}
    for name, t in state_dict.items():
        key = (t.untyped_storage().data_ptr(), t.storage_offset())
        if key in seen:
            continue
        seen.add(key)
        out[name] = t.detach().to("cpu", DTYPES[dtype]).contiguous()
    path = folder / "model.safetensors"
    save_file(out, str(path))
    return path


class VLLMEngine:
    """`Engine` over a vLLM server (module docstring). Build it with `from_config`, or directly on a
    `base_url` (and optionally the `server` it owns and stops on `close()`)."""

    def __init__(
        self,
        base_url: str,
        tokenizer: Any,
        *,
        model_name: str = SERVED_NAME,
        server: VLLMServer | None = None,
        max_context: int | None = None,
        dtype: str = "float32",
        weight_sync: str = "reload",
        weights_dir: str | Path | None = None,
        request_timeout_s: float = 3600.0,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._tokenizer = tokenizer
        self.model_name = model_name
        self.server = server
        self.max_context = max_context
        self.dtype = dtype
        self.weight_sync = weight_sync
        self._own_weights_dir = weights_dir is None
        self.weights_dir = Path(weights_dir or tempfile.mkdtemp(prefix="harnessrl-vllm-weights-"))
        self.weights_version = 0
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(request_timeout_s, connect=10.0))
        self._open = asyncio.Event()
        self._open.set()
        self._inflight = 0
        self._drained = asyncio.Event()
        self._drained.set()
        self._updating = asyncio.Lock()
        """One weight or adapter change at a time."""
        self._closed = False

    @classmethod
    def from_config(cls, cfg: EngineConfig) -> VLLMEngine:
        """Managed mode starts the server (blocks until it answers); server mode only connects."""
        from harnessrl.engines.models import TINY_QWEN3, load_tokenizer, resolve_checkpoint, trained_context

        v = cfg.vllm
        common: dict[str, Any] = {
            "dtype": cfg.dtype,
            "weight_sync": v.weight_sync,
            "weights_dir": v.weights_dir,
            "request_timeout_s": v.request_timeout_s,
        }
        if v.url is not None:
            name = v.served_model or served_models(v.url)[0]
            tok = load_tokenizer(cfg.model)
            return cls(v.url, tok, model_name=name, max_context=cfg.context_length, **common)
        python = Path(v.python) if v.python is not None else default_vllm_python()
        if not python.is_file():
            raise EngineError(
                f"no vLLM environment at {python} (run scripts/setup_vllm, or set engine.vllm.python "
                "or HARNESSRL_VLLM_ENV; engine.vllm.url connects to a running server instead)"
            )
        if cfg.model == TINY_QWEN3:
            raise EngineError("the vllm engine serves `default` or a checkpoint folder, not tiny-qwen3")
        folder = resolve_checkpoint(cfg.model)
        tok = load_tokenizer(cfg.model)
        context = cfg.context_length or trained_context(cfg.model)
        spec = ServerSpec(
            model=folder,
            dtype=cfg.dtype,
            max_model_len=context,
            port=v.port,
            kv_cache_gb=v.kv_cache_gb,
            gpu_memory_utilization=v.gpu_memory_utilization,
            enable_lora=v.enable_lora,
            max_lora_rank=v.max_lora_rank,
            enforce_eager=v.enforce_eager,
            extra_args=[*v.extra_args, "--max-num-seqs", str(cfg.max_batch)],
            threads=v.threads,
            python=python,
        )
        log = Path(tempfile.mkdtemp(prefix="harnessrl-vllm-")) / "server.log"
        server = VLLMServer.start(spec, log, timeout_s=v.startup_timeout_s)
        return cls(server.url, tok, server=server, max_context=context, **common)

    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    # ---------------------------------------------------------------- generation

    async def generate(self, prompt_ids: list[int], sampling: SamplingParams) -> GenerationResult:
        self._check_request(prompt_ids, sampling)
        await self._open.wait()  # a weight update is in progress: start on the new weights
        if self._closed:
            raise EngineError("engine is closed")
        self._inflight += 1
        self._drained.clear()
        version = self.weights_version
        try:
            data = await self._post("/v1/completions", completion_body(self.model_name, prompt_ids, sampling))
        finally:
            self._inflight -= 1
            if not self._inflight:
                self._drained.set()
        ids, logprobs, reason, cached = parse_completion(data)
        meta = {"weights_version": version, "prompt_tokens": len(prompt_ids), "cached_tokens": cached}
        return GenerationResult(ids, logprobs, reason, meta)

    def _check_request(self, prompt_ids: list[int], sampling: SamplingParams) -> None:
        if self._closed:
            raise EngineError("engine is closed")
        if not prompt_ids:
            raise EngineError("empty prompt")
        if sampling.max_tokens < 1:
            raise EngineError(f"max_tokens must be at least 1, got {sampling.max_tokens}")
        if self.max_context is not None and len(prompt_ids) >= self.max_context:
            raise EngineError(
                f"prompt of {len(prompt_ids)} tokens leaves no room in the context of {self.max_context}"
            )

    async def _post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        try:
            resp = await self._client.post(self.base_url + path, json=body)
        except httpx.HTTPError as e:
            raise EngineError(f"vLLM server {self.base_url} unreachable on {path}: {e!r}") from e
        if resp.status_code != 200:
            raise EngineError(f"vLLM {path} answered {resp.status_code}: {resp.text[:500]}")
        if "json" not in resp.headers.get("content-type", ""):
            return resp.text  # e.g. /v1/load_lora_adapter answers a plain-text "Success: ..."
        return resp.json()

    # ---------------------------------------------------------------- weights

    async def update_weights(self, state_dict: dict[str, Any]) -> None:
        """Reload the server's weights in place (module docstring); calls in flight finish first and
        calls made meanwhile wait and run on the new weights."""
        if self._closed:
            raise EngineError("engine is closed")
        if self.weight_sync == "none":
            return
        async with self._updating:
            await self._reload(state_dict)

    async def _reload(self, state_dict: dict[str, Any]) -> None:
        self._open.clear()
        try:
            await self._drained.wait()
            folder = self.weights_dir / f"v{self.weights_version + 1}"
            await asyncio.to_thread(write_safetensors, state_dict, folder, self.dtype)
            rpc = {"method": "reload_weights", "kwargs": {"weights_path": str(folder)}}
            await self._post("/collective_rpc", rpc)
            await self._post("/reset_prefix_cache")
            old = self.weights_dir / f"v{self.weights_version}"
            self.weights_version += 1
            if old.is_dir():
                shutil.rmtree(old, ignore_errors=True)  # the server has read the new folder
        finally:
            self._open.set()

    async def load_lora_adapter(self, name: str, folder: str | Path) -> None:
        """Load (or reload in place) a PEFT adapter folder under `name`; later calls sample from it."""
        body = {"lora_name": name, "lora_path": str(folder), "load_inplace": True}
        async with self._updating:
            self._open.clear()
            try:
                await self._drained.wait()
                await self._post("/v1/load_lora_adapter", body)
                self.model_name = name
                self.weights_version += 1
            finally:
                self._open.set()

    async def close(self) -> None:
        """Close the client, stop a managed server, drop the weights folder we made. Idempotent."""
        self._closed = True
        self._open.set()  # waiting calls wake up and fail
        await self._client.aclose()
        if self.server is not None:
            await asyncio.to_thread(self.server.stop)
        if self._own_weights_dir:
            shutil.rmtree(self.weights_dir, ignore_errors=True)


def served_models(url: str) -> list[str]:
    """Model names a vLLM server serves (`GET /v1/models`); EngineError when it does not answer."""
    try:
        resp = httpx.get(url.rstrip("/") + "/v1/models", timeout=10.0)
        resp.raise_for_status()
        names = [str(m["id"]) for m in resp.json()["data"]]
    except (httpx.HTTPError, KeyError, TypeError, ValueError) as e:
        raise EngineError(f"cannot list the models of vLLM server {url}: {e!r}") from e
    if not names:
        raise EngineError(f"vLLM server {url} serves no model")
    return names
