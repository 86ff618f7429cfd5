"""Launch one harness inside one sandbox against one endpoint, and read how it ended.

The rollout runner owns everything around this (proxy session, scoring, statuses); this function
only installs (once), configures, runs with a timeout and parses. A harness that crashes or hangs is
not an exception here: it comes back as a HarnessResult with ok=False / timed_out=True. A sandbox
that breaks raises SandboxError; an adapter that cannot be installed raises HarnessError.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harnessrl.harnesses.base import Endpoint, Harness, HarnessContext, HarnessResult, McpServer
from harnessrl.harnesses.install import harness_dir
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import HarnessError


def harness_binds(cache_root: Path | None = None) -> tuple[Path, ...]:
    """Read-only binds a SandboxSpec needs so that installed harnesses can run inside it."""
    return (harness_dir(cache_root),)


def _visible(sandbox: Sandbox, path: Path) -> bool:
    if sandbox.spec.backend == "local" or path.is_relative_to("/usr"):
        return True
    return any(path.is_relative_to(b) for b in sandbox.spec.ro_binds)


async def run_harness(
    harness: Harness,
    sandbox: Sandbox,
    endpoint: Endpoint,
    prompt: str,
    *,
    timeout_s: float,
    mcp_servers: Sequence[McpServer] = (),
    options: Mapping[str, Any] | None = None,
    cache_root: Path | None = None,
) -> tuple[HarnessResult, ExecResult]:
    """Install if needed, write config, run headless in `sandbox`, parse; returns (parsed, raw)."""
    try:
        install_dir = await asyncio.to_thread(harness.ensure_installed, cache_root)
    except OSError as e:
        raise HarnessError(f"{harness.name}: install failed: {e}") from e
    if not _visible(sandbox, install_dir):
        raise HarnessError(
            f"{harness.name} is installed at {install_dir}, which sandbox {sandbox.id} does not bind; "
            "add harness_binds() to SandboxSpec.ro_binds"
        )
    ctx = HarnessContext(
        prompt=prompt,
        endpoint=endpoint,
        workspace=sandbox.workspace,
        home=sandbox.home,
        host_home=sandbox.host_home,
        install_dir=install_dir,
        mcp_servers=tuple(mcp_servers),
        options=dict(options or {}),
    )
    try:
        launch = harness.prepare(ctx)
        sandbox.hand_over(sandbox.host_home)  # configs written as us, used by the sandbox's own uid
    except (ValueError, OSError) as e:  # bad options, unwritable HOME: the harness cannot be launched
        raise HarnessError(f"{harness.name}: cannot configure: {e}") from e
    raw = await sandbox.exec(
        launch.argv, env=launch.env, cwd=launch.cwd, timeout_s=timeout_s, rlimits=launch.rlimits
    )
    return harness.parse(raw), raw
