"""Config sections of `sandbox/`: the rollout and checker sandboxes.

Assembled into `harnessrl.config.Config`, which re-exports them. A section module imports only
pydantic, `Section` and other section modules, so `harnessrl.config` never imports what they configure.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from harnessrl.config_section import Section


class SandboxConfig(Section):
    backend: Literal["bwrap", "local"] = "bwrap"
    """bwrap = bubblewrap isolation; local = no isolation (warns on every use)."""
    memory_mb: int | None = 4096
    """Address-space limit per sandbox, where the kernel allows."""
    pool_size: int | None = None
    """Sandboxes kept prewarmed per workspace mount point; None = as many as `rollout.concurrency`,
    0 = create each rollout's sandbox on demand. A pooled rollout skips sandbox start-up (bwrap plus
    the in-sandbox agent) on its critical path: ~3.4 ms instead of ~9 ms of isolation cost per rollout
    on 2 idle cores, and under load (rollouts back to back) 1.1-1.5x the rate of fresh sandboxes at
    32 concurrent, at parity at 8 (`benchmarks/sandbox.py`, native agent, 2026-12-02 and -03). The
    price: each idle sandbox holds two processes (~10 MB), and the task's workspace is copied in and
    moved out instead of bound."""
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
