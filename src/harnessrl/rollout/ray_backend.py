"""Rollout workers as Ray actors (`rollout.backend = "ray"`), behind the proxy of the driver.

    async with RayRolloutRunner(sessions, ("127.0.0.1", proxy_port), settings, cfg.rollout.ray) as runner:
        rollouts = await runner.run_many(jobs)           # same interface as RolloutRunner

One shared proxy, many workers. The engine lives in the driver (next to the trainer, so weights move
in process or to one vLLM server), and so do the proxy and its session store: every captured call is
recorded where it is trained, and sessions are opened and closed next to it. Each worker actor owns a
`RolloutRunner` without sessions (its own sandbox pool, harness installs, checker sandboxes) and runs
the phases of a rollout that need a machine: the driver opens the session, the worker runs
`prepare` + `agent` (sandbox, harness, teardown) with the session's token, the driver closes the
session and `settle`s the calls and status, and the worker runs `complete` (checker, artifacts).
Sandboxes reach the proxy at `endpoint`: 127.0.0.1 on a local cluster; across machines the proxy
listens on `0.0.0.0` and workers get `rollout.ray.advertise_host` (default: this node's IP).

A worker is a process of its own; its sandboxes are its children (bwrap `--die-with-parent`), so a
worker that dies takes its rollouts' processes with it. Its in-flight rollouts then end as
`sandbox_error` with the calls they made, or run again (`rollout.ray.retries`) on a restarted or
other worker (Ray restarts a dead actor up to `rollout.ray.max_restarts` times), and the step
completes. Jobs go to the worker with the fewest rollouts in flight (`rollout.concurrency` each).

Cluster. `rollout.ray.address = None` starts a local cluster for the command (and stops it at the
end); `"auto"` or an address joins an existing one (the workers import harnessrl there, so every node
needs it installed, and `rollout.out_dir` should be a shared folder: artifacts are written where the
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
from types import TracebackType
from typing import Any

from harnessrl.formats.rollout_dir import write_rollout_head
from harnessrl.proxy.sessions import SessionStore
from harnessrl.rollout.artifacts import write_artifacts
from harnessrl.rollout.config import RayConfig
from harnessrl.rollout.runner import AgentOutcome, RolloutJob, RolloutRunner, RunnerSettings, run_all
from harnessrl.rollout.status import internal_error, settle, untrusted_failure
from harnessrl.sandbox.fscopy import remove_tree
from harnessrl.sandbox.spec import ExecResult
from harnessrl.types import WORKER_LOST, ModelCall, Rollout, RolloutStatus, group_id

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
    """The body of one Ray actor: a session-less RolloutRunner running a rollout's machine phases."""

    def __init__(self, settings: RunnerSettings, endpoint: tuple[str, int]) -> None:
        self.runner = RolloutRunner(None, endpoint, settings)

    def pid(self) -> int:
        return os.getpid()

    def node(self) -> str:
        """The address of the Ray node this worker runs on."""
        import ray

        return str(ray.util.get_node_ip_address())

    async def agent(
        self, job: RolloutJob, token: str, server_url: str, folder: str
    ) -> tuple[Rollout, AgentOutcome]:
        """Steps 1-4 (`RolloutRunner.prepare` and `agent`) with the driver's session token, in the
        attempt's own folder."""
        rollout = await self.runner.prepare(job, Path(folder))
        try:
            outcome = await self.runner.agent(job, rollout, token, server_url)
        except Exception as e:
            internal_error(rollout, e)
            outcome = AgentOutcome()
        return rollout, outcome

    async def complete(self, job: RolloutJob, rollout: Rollout, raw: ExecResult | None) -> Rollout:
        return await self.runner.complete(job, rollout, raw)

    async def close(self) -> None:
        await self.runner.close()


class RayRolloutRunner:
    """Runs rollouts on Ray worker actors against this process's proxy (see the module docstring)."""

    def __init__(
        self,
        sessions: SessionStore,
        endpoint: tuple[str, int],
        settings: RunnerSettings,
        cfg: RayConfig,
        *,
        listens_everywhere: bool = False,
    ) -> None:
        self.sessions = sessions
        self.endpoint = endpoint
        self.settings = settings
        self.cfg = cfg
        self.listens_everywhere = listens_everywhere
        """The proxy listens on 0.0.0.0: workers of an existing cluster reach it at this node's IP."""
        self.workers: list[Any] = []
        self._load: list[int] = []
        self._where: dict[str, int] = {}
        """Rollout id -> index of the worker running it (while it runs)."""
        self._calls: dict[str, list[ModelCall]] = {}
        """Rollout id -> the calls its last attempt made (kept for a rollout whose worker died)."""
        self._down: set[int] = set()
        """Workers out of rotation (died; Ray is restarting them)."""
        self._dead: set[int] = set()
        """Workers out of restarts."""
        self._revivals: set[asyncio.Task[None]] = set()
        self._nodes: list[str] = []
        """Worker index -> the address of the node it runs on (asked again when a worker comes back)."""
        self._owns_cluster = False
        self._slots = asyncio.Semaphore(max(1, settings.concurrency) * cfg.workers)

    async def start(self) -> None:
        """Join or start the cluster, then start the worker actors (each reserves `worker_cpus`)."""
        import ray

        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if self.cfg.address is None:
                kwargs["num_cpus"] = self.cfg.num_cpus
                self._owns_cluster = True
            ray.init(address=self.cfg.address, **kwargs)
        host = self.cfg.advertise_host or self.endpoint[0]
        if self.cfg.advertise_host is None and self.cfg.address is not None and self.listens_everywhere:
            host = ray.util.get_node_ip_address()  # other nodes cannot reach 127.0.0.1
        actor = ray.remote(RolloutWorker).options(
            num_cpus=self.cfg.worker_cpus,
            max_restarts=self.cfg.max_restarts,
            max_task_retries=0,
            runtime_env={"env_vars": {"RAY_USE_UVLOOP": "0"}},  # see WORKER_LOOP
        )
        endpoint = (host, self.endpoint[1])
        self.workers = [actor.remote(self.settings, endpoint) for _ in range(self.cfg.workers)]
        self._load = [0] * len(self.workers)
        self._nodes = list(await asyncio.gather(*(w.node.remote() for w in self.workers)))  # all up

    async def worker_pid(self, rollout_id: str) -> int | None:
        """The process id of the worker running `rollout_id` (None when it is not running)."""
        index = self._where.get(rollout_id)
        return None if index is None else int(await self.workers[index].pid.remote())

    async def run_many(
        self, jobs: Sequence[RolloutJob], on_done: Callable[[Rollout], None] | None = None
    ) -> list[Rollout]:
        """Run jobs over the workers (at most `concurrency` per worker at once); results in job order."""

        return await run_all(self.run, jobs, self._slots, on_done)

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
                done = await self._attempt(index, job, attempts)
                self._calls.pop(job.rollout_id, None)
                return done
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
        worker = self.workers[index]
        folder = self.settings.out_dir / ATTEMPTS / f"{job.rollout_id}.{attempts}"
        info = self.sessions.open(job.rollout_id)
        try:
            where = (info.token, self.sessions.server_url, str(folder))
            rollout, outcome = await worker.agent.remote(job, *where)
        finally:
            closed = self.sessions.close(job.rollout_id)
            self._calls[job.rollout_id] = list(closed)
        try:
            settle(rollout, closed, closed.dropped, outcome.result)
        except Exception as e:  # still data, as in RolloutRunner.run: the policy's once it was launched
            if outcome.launched:
                untrusted_failure(rollout, RolloutStatus.HARNESS_ERROR, "settling the rollout", e)
            else:
                internal_error(rollout, e)
        rollout.node, rollout.attempts = self._nodes[index], attempts
        done: Rollout = await worker.complete.remote(job, rollout, outcome.raw)
        await asyncio.to_thread(self._publish, done, folder)
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
        """A rollout whose last worker died: `sandbox_error`, its folder holding what is known."""
        rdir = self.settings.out_dir / job.rollout_id
        rollout = Rollout(
            rollout_id=job.rollout_id,
            task_id=job.task.id,
            harness=job.harness,
            group_id=job.group_id or group_id(job.task.id, job.harness),
            calls=self._calls.pop(job.rollout_id, []),
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

    async def __aenter__(self) -> RayRolloutRunner:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()
