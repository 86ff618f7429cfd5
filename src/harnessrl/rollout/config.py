"""Config sections of `rollout/`: how rollouts run (harness, concurrency, backend).

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from harnessrl.config_section import Section
from harnessrl.engines.config import EngineConfig
from harnessrl.proxy.config import ProxyConfig
from harnessrl.sandbox.config import SandboxConfig
from harnessrl.verify.config import VerifyConfig

KeepFiles = Literal["all", "failed", "none"]
"""What a rollout folder keeps of the agent's files (`RolloutConfig.keep_agent_files`)."""


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
    """Address the workers' proxy processes reach the driver's engine server at; None = the address it
    binds (`proxy.engine_host`), or this node's IP when that is `0.0.0.0`."""


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
    """asyncio = every rollout in this process (its sessions in this process's proxy, or in
    `proxy.processes` proxy processes); ray = on Ray worker actors (`rollout.ray`), each with its own
    sandboxes and proxy process, calling this process's engine."""
    ray: RayConfig = Field(default_factory=RayConfig)
    """Ray cluster and workers (only with `backend = "ray"`)."""
    keep_agent_files: KeepFiles = "all"
    """What each rollout folder keeps of the agent's own files once it is scored: its final
    `workspace/` and, on an image, its writable `layer/` (each up to the sandbox's caps): `all`,
    `failed` (only rollouts whose status is not ok, to look into) or `none`. The record, the calls,
    the harness's output and `workspace.diff` stay either way; at scale `failed` or `none` keeps
    the run's disk from growing by a workspace (an image's layer) per rollout."""
    harness_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Adapter switches per harness name, the same shape as `train.harness_options`, e.g.
    `{"claude-code" = {bare = true}}` or `-o rollout.harness_options.shell.command="make"`
    (`harnessrl rollout --option bare=true` sets them for the chosen harness)."""


class RolloutSections(Section):
    """The sections a batch of rollouts is built from (`rollout.session.RolloutStack`): the engine, the
    proxy in front of it, the sandboxes, the runner and the scoring. `harnessrl.config.Config` holds
    them among the rest; the library takes this bundle (or a larger one that extends it)."""

    engine: EngineConfig = Field(default_factory=EngineConfig)
    """The policy's inference engine."""
    proxy: ProxyConfig = Field(default_factory=ProxyConfig)
    """The model-API proxy the harnesses call."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    """The sandboxes of rollouts and checkers."""
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    """How rollouts run: harness, concurrency, timeout, backend."""
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    """Scoring: code checkers, the rubric judge, hybrid weights."""
