"""Rollout workers as Ray actors (`rollout.backend = "ray"`), each with a proxy process of its own.

    runner = RayRolloutRunner(settings, cfg.rollout.ray)
    runner.join()                                        # ray.init (or join `rollout.ray.address`)
    await runner.start(NodeSpec(engine_url=..., engine_token=...))   # the driver's engine server
    rollouts = await runner.run_many(jobs)               # same interface as RolloutRunner

The engine lives in the driver (next to the trainer, so weights move in process or to one vLLM
server) and is served to the workers over HTTP (`engines.serve.EngineServer`, private interface, the
run's token). Each worker actor owns a `RolloutRunner` whose sessions live in a proxy process of its
own on its machine (`proxy.process.ProxyProcess`, bound to 127.0.0.1 there): a rollout runs whole on
its worker (sandbox, harness, session, checker, artifacts), its sandbox's model calls go to that
node's proxy, and only the proxy's engine calls leave the machine. The finished rollout, its calls
read once from the journal in its folder, comes back as the actor call's return value.

A worker is a process of its own; its sandboxes and its proxy process are its children (bwrap
`--die-with-parent`; the proxy process exits when its stdin closes), so a worker that dies takes its
rollouts' processes with it. Its in-flight rollouts then end as `sandbox_error` with the calls their
journal holds, or run again (`rollout.ray.retries`) on a restarted or other worker (Ray restarts a
dead actor up to `rollout.ray.max_restarts` times), and the step completes. A proxy process that dies
under a live worker ends that worker's open rollouts as `engine_error` (infra) with their journaled
calls; the next rollout starts a new one. Jobs go to the worker with the fewest rollouts in flight
(`rollout.concurrency` each).

Cluster. `rollout.ray.address = None` starts a local cluster for the command (and stops it at the
end); `"auto"` or an address joins an existing one (the workers import harnessrl there, so every node
needs it installed, and `rollout.out_dir` must be a shared folder: artifacts are written where the
worker runs). Ray is the optional extra `harnessrl[ray]`; nothing else imports it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harnessrl.formats.calls import CALLS_FILE
from harnessrl.formats.rollout_dir import write_rollout_head
from harnessrl.proxy.node import NodeSpec
from harnessrl.proxy.process import ProxyLost, ProxyProcess, read_journal
from harnessrl.rollout.artifacts import write_artifacts
from harnessrl.rollout.config import RayConfig
from harnessrl.rollout.prompt_check import PromptCheck
from harnessrl.rollout.runner import RolloutJob, RolloutRunner, RunnerSettings, run_all
from harnessrl.sandbox import identity
from harnessrl.sandbox.folders import default_base_dir, sweep_once
from harnessrl.sandbox.fscopy import remove_tree
from harnessrl.types import WORKER_LOST, Rollout, RolloutStatus, group_id

log = logging.getLogger(__name__)


ATTEMPTS = ".attempts"
"""Each try of a rollout runs in a folder of its own, `out_dir/.attempts/<rollout id>.<try>`, and the
driver renames the finished one to `out_dir/<rollout id>`. A worker that lost its node may live on
(a partitioned machine, or here a worker outliving its raylet for a while) and go on writing into
its folder while the rollout runs again elsewhere: the two tries never share a path, and the rollout
folder readers see holds exactly the try that was counted (`tests/test_multinode.py`)."""

WORKER_LOOP = """Ray runs an async actor's methods on a uvloop loop by default. uvloop refuses to
spawn a process while another spawn is under way in the process ("Racing with another loop to spawn
a process"), and a worker spawns from several threads (sandbox start-up on the actor's loop, the
checker's sandbox on a loop of its own in a helper thread): 3 of 160 trivial rollouts failed that
way. The workers run on the standard asyncio loop instead (RAY_USE_UVLOOP=0): 0 of 192."""


class RolloutWorker:
    """The body of one Ray actor: a RolloutRunner whose sessions live in this worker's proxy process."""

    def __init__(self, settings: RunnerSettings, spec: NodeSpec) -> None:
        sweep_once(default_base_dir())  # a restarted worker: what its killed predecessor left, now
        self.proxy = ProxyProcess(spec)
        self.runner = RolloutRunner(self.proxy, self.proxy.endpoint, settings)

    def pid(self) -> int:
        return os.getpid()

    def node(self) -> str:
        """The address of the Ray node this worker runs on."""
        import ray

        return str(ray.util.get_node_ip_address())

    async def ready(self) -> str:
        """Start this worker's proxy process (ProxyLost when it cannot start); the node's address."""
        await self.proxy.start()
        self.runner.endpoint = self.proxy.endpoint
        return self.node()

    async def proxy_pid(self) -> int | None:
        """The process id of this worker's proxy process (started if it is not running)."""
        with contextlib.suppress(ProxyLost):
            await self.proxy.start()
        return self.proxy.pid

    async def proxy_stats(self, reset: bool = False) -> dict[str, Any]:
        """`ProxyProcess.stats` of this worker's proxy process."""
        return await self.proxy.stats(reset)

    async def run(self, job: RolloutJob, folder: str) -> Rollout:
        """One whole rollout (`RolloutRunner.run`) in the attempt's own folder."""
        with contextlib.suppress(ProxyLost):  # then opening its session fails: an infra error of the rollout
            await self.proxy.start()
        self.runner.endpoint = self.proxy.endpoint  # the port is known once it runs
        return await self.runner.run(job, Path(folder))

    async def close(self) -> None:
        """Destroy the prewarmed sandboxes, stop the proxy process, take this process's staging
        binds down: `RayRolloutRunner.close` then ends the actor with `ray.kill` (SIGKILL, no exit
        hooks), which left a staging folder with its binds per worker until a later sweep."""
        try:
            await self.runner.close()
            await self.proxy.stop()
        finally:
            await asyncio.to_thread(identity.unstage_all)


class RayRolloutRunner:
    """Runs rollouts on Ray worker actors, each with its own proxy process (see the module docstring)."""

    def __init__(self, settings: RunnerSettings, cfg: RayConfig) -> None:
        self.settings = settings
        self.cfg = cfg
        self.workers: list[Any] = []
        self._load: list[int] = []
        self._where: dict[str, int] = {}
        """Rollout id -> index of the worker running it (while it runs)."""
        self._folders: dict[str, Path] = {}
        """Rollout id -> the folder of its last attempt (whose journal a lost rollout's calls come from)."""
        self._down: set[int] = set()
        """Workers out of rotation (died; Ray is restarting them)."""
        self._dead: set[int] = set()
        """Workers out of restarts."""
        self._revivals: set[asyncio.Task[None]] = set()
        self._nodes: list[str] = []
        """Worker index -> the address of the node it runs on (asked again when a worker comes back)."""
        self._owns_cluster = False
        self._slots = asyncio.Semaphore(max(1, settings.concurrency) * cfg.workers)
        self.prompts = PromptCheck()
        """Each harness's first prompt in this run (`prompt_check.py`)."""

    def join(self) -> str:
        """Join or start the cluster (`rollout.ray.address`); returns this node's address on it."""
        import ray

        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.cfg.address is None:
                kwargs["num_cpus"] = self.cfg.num_cpus
                self._owns_cluster = True
            ray.init(address=self.cfg.address, **kwargs)
        return str(ray.util.get_node_ip_address())

    async def start(self, spec: NodeSpec) -> None:
        """Start the worker actors (each reserves `worker_cpus`; each starts its proxy process from
        `spec`, which says where the engine server is). Joins the cluster first if not done."""
        import ray

        self.join()
        actor = ray.remote(RolloutWorker).options(
            num_cpus=self.cfg.worker_cpus,
            max_restarts=self.cfg.max_restarts,
            max_task_retries=0,
            runtime_env={"env_vars": {"RAY_USE_UVLOOP": "0"}},  # see WORKER_LOOP
        )
        self.workers = [actor.remote(self.settings, spec) for _ in range(self.cfg.workers)]
        self._load = [0] * len(self.workers)
        self._nodes = list(await asyncio.gather(*(w.ready.remote() for w in self.workers)))  # all up

    async def worker_pid(self, rollout_id: str) -> int | None:
        """The process id of the worker running `rollout_id` (None when it is not running)."""
        index = self._where.get(rollout_id)
        return None if index is None else int(await self.workers[index].pid.remote())

    async def run_many(
        self, jobs: Sequence[RolloutJob], on_done: Callable[[Rollout], None] | None = None
    ) -> list[Rollout]:
        """Run jobs over the workers (at most `concurrency` per worker at once); results in job order."""

        return await run_all(self.run, jobs, self._slots, on_done, self.prompts)

    async def run(self, job: RolloutJob) -> Rollout:
        """One rollout to exactly one status; a dead worker's rollout is retried or `sandbox_error`."""
        from ray.exceptions import RayActorError

        error: BaseException | None = None
        attempts = 0
        for attempt in range(self.cfg.retries + 1):
            index = await self._pick()
            if index is None:
                break
            attempts = attempt + 1
            self._load[index] += 1
            self._where[job.rollout_id] = index
            try:
                return await self._attempt(index, job, attempts)
            except RayActorError as e:
                log.warning("rollout %s: worker %d died (attempt %d): %s", job.rollout_id, index, attempt, e)
                error = e
                self._mark_down(index)
            finally:
                self._load[index] -= 1
                self._where.pop(job.rollout_id, None)
        return await self._lost(job, error, attempts)

    async def _pick(self) -> int | None:
        """The live worker with the fewest rollouts in flight; waits while every one is restarting;
        None once every worker is dead for good."""
        while True:
            up = [i for i in range(len(self.workers)) if i not in self._down]
            if up:
                return min(up, key=lambda i: self._load[i])
            if len(self._dead) == len(self.workers):
                return None
            await asyncio.sleep(0.1)

    def _mark_down(self, index: int) -> None:
        """Take a failed worker out of rotation until it answers again (Ray restarts it)."""
        if index not in self._down:
            self._down.add(index)
            self._revivals.add(asyncio.create_task(self._wait_up(index)))

    async def _wait_up(self, index: int) -> None:
        from ray.exceptions import ActorDiedError, RayActorError

        while True:
            try:
                await self.workers[index].pid.remote()
            except ActorDiedError:  # out of restarts: it stays down
                self._dead.add(index)
                return
            except RayActorError:  # restarting
                await asyncio.sleep(0.2)
                continue
            with contextlib.suppress(RayActorError):  # a restart may land on another node
                self._nodes[index] = await self.workers[index].node.remote()
            self._down.discard(index)
            return

    async def _attempt(self, index: int, job: RolloutJob, attempts: int) -> Rollout:
        folder = self.settings.out_dir / ATTEMPTS / f"{job.rollout_id}.{attempts}"
        self._folders[job.rollout_id] = folder
        done: Rollout = await self.workers[index].run.remote(job, str(folder))
        done.node, done.attempts = self._nodes[index], attempts
        await asyncio.to_thread(self._publish, done, folder)
        self._folders.pop(job.rollout_id, None)
        return done

    def _publish(self, rollout: Rollout, folder: Path) -> None:
        """Move a finished attempt's folder to `out_dir/<rollout id>` (one rename; see ATTEMPTS) and
        record the new place; a folder that did not arrive is marked `artifacts_missing`."""
        final = self.settings.out_dir / rollout.rollout_id
        try:
            if final.exists():
                remove_tree(final)  # a previous run's folder of the same id: the agent's, any depth
            os.rename(folder, final)
        except OSError as e:
            log.warning(
                "rollout %s: its folder %s (written on node %s) cannot be moved to %s (%s): is "
                "rollout.out_dir a folder every node shares?",
                rollout.rollout_id,
                folder,
                rollout.node,
                final,
                e,
            )
            rollout.artifacts_missing = True
            return
        rollout.workdir = str(final)
        write_rollout_head(final, rollout)

    async def _lost(self, job: RolloutJob, error: BaseException | None, attempts: int) -> Rollout:
        """A rollout whose last worker died: `sandbox_error`, its folder holding what is known, its calls
        those its last attempt's journal holds."""
        rdir = self.settings.out_dir / job.rollout_id
        folder = self._folders.pop(job.rollout_id, None)
        calls = await asyncio.to_thread(read_journal, folder / CALLS_FILE) if folder is not None else []
        rollout = Rollout(
            rollout_id=job.rollout_id,
            task_id=job.task.id,
            harness=job.harness,
            group_id=job.group_id or group_id(job.task.id, job.harness),
            calls=calls,
            status=RolloutStatus.SANDBOX_ERROR,
            status_reason=f"{WORKER_LOST} ({type(error).__name__}); the calls it made are kept"
            if error is not None
            else f"{WORKER_LOST}: every rollout worker is dead",
            fault="infra",
            workdir=str(rdir),
            attempts=attempts,
        )

        def write() -> None:
            rdir.mkdir(parents=True, exist_ok=True)
            write_artifacts(rdir, rollout, None, rdir / ".initial", rdir / "workspace")
            shutil.rmtree(rdir / ".initial", ignore_errors=True)

        await asyncio.to_thread(write)
        return rollout

    async def close(self) -> None:
        """Destroy the workers' sandbox pools, end the actors, stop the cluster if this runner started it."""
        import ray

        for task in self._revivals:
            task.cancel()
        workers, self.workers = self.workers, []
        for w in workers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(w.close.remote(), timeout=60)
            with contextlib.suppress(Exception):
                ray.kill(w)
        if self._owns_cluster and ray.is_initialized():
            ray.shutdown()
            self._owns_cluster = False
