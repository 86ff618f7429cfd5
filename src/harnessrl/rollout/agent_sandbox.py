"""The agent's sandbox of each rollout: made (fresh, or taken from a pool of prewarmed ones and filled
with the task's files) on the task's system (`environment.py`: the host's root or its image), and
destroyed with what the agent left kept safely for scoring (the final workspace; on an image, the
writable layer too).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

from harnessrl.harnesses.launch import harness_binds
from harnessrl.rollout.environment import layer_workspace, task_system
from harnessrl.sandbox import Sandbox, SandboxSpec
from harnessrl.sandbox.config import SandboxConfig
from harnessrl.sandbox.fscopy import TreeReport, sanitize_tree
from harnessrl.sandbox.pool import SandboxPool
from harnessrl.types import ImageError, Rollout, SandboxError, Task

log = logging.getLogger(__name__)


def tree_larger_than(root: Path, limit: int) -> bool:
    """True once the files under `root` add up to more than `limit` bytes (stops counting there)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
            if total > limit:
                return True
    return False


class AgentSandboxes:
    """The agent sandboxes of one runner, and its pools of prewarmed ones."""

    def __init__(
        self,
        cfg: SandboxConfig,
        concurrency: int,
        endpoint: Callable[[], tuple[str, int]],
        agent_env: Path | None,
        harness_cache: Path | None,
    ) -> None:
        self.cfg = cfg
        self.concurrency = concurrency
        self.endpoint = endpoint
        """The host address of the model endpoint, asked per sandbox (a proxy process's port is known
        only once it runs, and a runner's is set again then)."""
        self.agent_env = agent_env
        self.harness_cache = harness_cache
        self.pools: dict[str, SandboxPool] = {}
        """Pools by the JSON of their sandboxes' spec."""

    def spec(self, task: Task, workspace: Path | None) -> SandboxSpec:
        binds = harness_binds(self.harness_cache)
        system = task_system(task)
        return system.agent_spec(task, workspace, self.cfg, self.endpoint(), binds, self.agent_env)

    async def open(self, task: Task, workspace: Path) -> Sandbox:
        """A prewarmed sandbox filled with a copy of `workspace`, or a fresh one with it bound (pool_size
        0, or a workspace over `pool_max_workspace_mb`).

        Pools are kept per sandbox spec (tasks of one set on one system share it); a pooled sandbox
        owns its workspace, which `finish` moves back to `workspace` once everything inside
        is dead. A task on an image always gets a sandbox of its own workspace (the image's folder).
        """
        try:
            image = task_system(task).image
        except ImageError as e:  # not prepared in this process, and not on this machine
            raise SandboxError(str(e)) from e
        size = self.cfg.pool_size
        if size is None:
            size = max(1, self.concurrency)
        limit = int(self.cfg.pool_max_workspace_mb * 2**20)
        if image is None and (size <= 0 or await asyncio.to_thread(tree_larger_than, workspace, limit)):
            return await Sandbox.create(self.spec(task, workspace))
        spec = self.spec(task, None)
        if size <= 0:
            sandbox = await Sandbox.create(spec)
        else:
            pool = self.pools.get(spec.model_dump_json())
            if pool is None:
                pool = self.pools[spec.model_dump_json()] = SandboxPool(spec, size)
            sandbox = await pool.acquire()
        try:
            await sandbox.load_workspace(workspace)
        except OSError as e:
            await sandbox.destroy()
            raise SandboxError(f"copying the workspace into sandbox {sandbox.id}: {e}") from e
        return sandbox

    async def finish(self, sandbox: Sandbox, workspace: Path, rollout: Rollout) -> str | None:
        """Destroy the agent's sandbox, then make the final workspace safe to score and read on the
        host: a pooled sandbox's is copied out by `fscopy.copy_untrusted`'s rules, a bound one is
        cleaned in place (`sanitize_tree`). Either way links that leave the workspace and special
        files are gone before the checker runs. A workspace over the caps, or one that could not be
        copied or cleaned at all, is the policy's doing (`harness_error`, never scored): why comes
        back, the report goes in `reward_detail["workspace"]`. On an image all it changed is kept
        (its writable layer, `<rollout>/layer`, by the same caps) and its working folder copied from
        that."""
        pooled = sandbox.spec.workspace is None
        layer = Path(rollout.workdir) / "layer" if sandbox.spec.image_root is not None else None
        if pooled:
            await asyncio.to_thread(shutil.rmtree, workspace, True)
        report: TreeReport | None = None
        try:
            keep = workspace if pooled and layer is None else None
            report = await sandbox.destroy(keep_workspace=keep, keep_layer=layer)
            if layer is not None and report is not None and not report.truncated:
                await asyncio.to_thread(layer_workspace, layer, sandbox.spec, workspace)
        except Exception as e:  # teardown is best effort here: the finaliser still kills and removes
            log.exception("destroying sandbox %s failed", sandbox.id)
            if pooled:
                report = TreeReport(truncated=f"the final workspace could not be copied out: {e!r}")
        if not pooled:
            try:
                report = await asyncio.to_thread(sanitize_tree, workspace, max_files=sandbox.spec.max_files)
            except Exception as e:
                log.exception("cleaning the workspace of rollout %s failed", rollout.rollout_id)
                report = TreeReport(truncated=f"the final workspace could not be cleaned: {e!r}")
        if report is None:
            return None
        if report.skipped_count or report.truncated:
            rollout.reward_detail["workspace"] = report.summary()
        return report.truncated or None

    async def close(self) -> None:
        """Destroy the prewarmed sandboxes of every pool (rollouts in flight keep theirs)."""
        pools, self.pools = list(self.pools.values()), {}
        for pool in pools:
            await pool.close()
