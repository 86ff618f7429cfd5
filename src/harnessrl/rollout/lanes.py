"""`proxy.processes = N` with the asyncio backend: N proxy processes on this machine, each serving the
sessions of its own lane of rollouts.

    lanes = ProcessLanes(NodeSpec(engine_url=..., engine_token=...), settings, processes=2)
    await lanes.start()
    rollouts = await lanes.run_many(jobs)           # same interface as RolloutRunner

A lane is a `RolloutRunner` whose session host is one `ProxyProcess` (its sandboxes' forwarders point
at that process's port, its sandbox pool is sized for its share of `rollout.concurrency`). A job goes
to the lane with the fewest rollouts in flight; at most `rollout.concurrency` run at once in all. The
proxy's work per call (parsing, rendering, tokenizing, recording) then runs on N cores, each process
with its own heap, and the driver's event loop only serves the engine (`engines.serve`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Callable, Sequence

from harnessrl.proxy.node import NodeSpec
from harnessrl.proxy.process import ProxyProcess
from harnessrl.rollout.prompt_check import PromptCheck
from harnessrl.rollout.runner import RolloutJob, RolloutRunner, RunnerSettings, run_all
from harnessrl.types import Rollout


class ProcessLanes:
    """Rollouts over N local proxy processes (module docstring)."""

    def __init__(self, spec: NodeSpec, settings: RunnerSettings, processes: int) -> None:
        share = dataclasses.replace(settings, concurrency=math.ceil(max(1, settings.concurrency) / processes))
        ports = [spec.port + i if spec.port else 0 for i in range(processes)]
        self.proxies = [ProxyProcess(spec.model_copy(update={"port": p})) for p in ports]
        self.runners = [RolloutRunner(p, p.endpoint, share) for p in self.proxies]
        self._load = [0] * processes
        self._slots = asyncio.Semaphore(max(1, settings.concurrency))
        self.prompts = PromptCheck()

    async def start(self) -> None:
        await asyncio.gather(*(p.start() for p in self.proxies))
        for proxy, runner in zip(self.proxies, self.runners, strict=True):
            runner.endpoint = proxy.endpoint  # the ports are known once they run

    async def run(self, job: RolloutJob) -> Rollout:
        lane = min(range(len(self.runners)), key=lambda i: self._load[i])
        self._load[lane] += 1
        try:
            return await self.runners[lane].run(job)
        finally:
            self._load[lane] -= 1

    async def run_many(
        self, jobs: Sequence[RolloutJob], on_done: Callable[[Rollout], None] | None = None
    ) -> list[Rollout]:
        """Run jobs over the lanes (at most `concurrency` at once in all); results in job order."""
        return await run_all(self.run, jobs, self._slots, on_done, self.prompts)

    async def close(self) -> None:
        """Destroy the lanes' sandbox pools and stop their proxy processes."""
        for runner in self.runners:
            await runner.close()
        await asyncio.gather(*(p.stop() for p in self.proxies))
