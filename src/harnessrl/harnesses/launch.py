"""Launch one harness inside one sandbox against one endpoint, and read how it ended.

The rollout runner owns everything around this (proxy session, scoring, statuses); `run_harness`
only installs (once), configures, runs with a timeout and parses. Its steps are public
(`configure_harness`, `exec_harness`, the adapter's `parse`) because the runner calls them one by
one: a failure after the exec is the policy's. A harness that crashes or hangs is not an exception
here: it comes back as a HarnessResult with ok=False / timed_out=True. A sandbox that breaks raises
SandboxError; an adapter that cannot be installed or configured raises HarnessError, and so does a
`parse` given output it cannot read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from harnessrl.harnesses.adapter import HarnessContext
from harnessrl.harnesses.install import harness_dir
from harnessrl.images.runtime import runtimes_dir
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import HarnessError

if TYPE_CHECKING:
    from harnessrl.harnesses.adapter import Endpoint, Harness, HarnessResult, LaunchSpec, McpServer


def harness_binds(cache_root: Path | None = None) -> tuple[Path, ...]:
    """Read-only binds a SandboxSpec needs so that installed harnesses can run inside it: their
    installs, and the Python runtimes some of them run on (`images/runtime.py`)."""
    return (harness_dir(cache_root), runtimes_dir(cache_root, make=True))


def _visible(sandbox: Sandbox, path: Path) -> bool:
    if sandbox.spec.backend == "local" or path.is_relative_to("/usr"):
        return True
    return any(path.is_relative_to(b) for b in sandbox.spec.ro_binds)


class Setup(TypedDict, total=False):
    """What a launch may add to the harness, the sandbox, the endpoint and the prompt."""

    mcp_servers: Sequence[McpServer]
    """Stdio MCP servers the harness starts inside the sandbox."""
    options: Mapping[str, Any] | None
    """Adapter switches (`Harness.check_options` checks them first)."""
    cache_root: Path | None
    """Cache root of the harness installs (default `cache.cache_root()`)."""


async def run_harness(
    harness: Harness,
    sandbox: Sandbox,
    endpoint: Endpoint,
    prompt: str,
    *,
    timeout_s: float,
    **setup: Unpack[Setup],
) -> tuple[HarnessResult, ExecResult]:
    """Install if needed, write config, run headless in `sandbox`, parse; returns (parsed, raw)."""
    launch = await configure_harness(harness, sandbox, endpoint, prompt, **setup)
    raw = await exec_harness(sandbox, launch, timeout_s)
    return harness.parse(raw), raw


async def configure_harness(
    harness: Harness,
    sandbox: Sandbox,
    endpoint: Endpoint,
    prompt: str,
    *,
    mcp_servers: Sequence[McpServer] = (),
    options: Mapping[str, Any] | None = None,
    cache_root: Path | None = None,
) -> LaunchSpec:
    """Install if needed and write the harness's config into the sandbox HOME; nothing runs in the
    sandbox yet. Raises HarnessError when the harness cannot be installed or configured."""
    check_options(harness, options or {})
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
    return launch


def check_options(harness: Harness, options: Mapping[str, Any]) -> None:
    """HarnessError when `harness` cannot take `options` (call it before making a sandbox)."""
    try:
        harness.check_options(options)
    except ValueError as e:
        raise HarnessError(f"{harness.name}: cannot configure: {e}") from None


async def exec_harness(sandbox: Sandbox, launch: LaunchSpec, timeout_s: float) -> ExecResult:
    """Run a configured harness headless: from here on, untrusted code runs."""
    return await sandbox.exec(
        launch.argv, env=launch.env, cwd=launch.cwd, timeout_s=timeout_s, rlimits=launch.rlimits
    )
