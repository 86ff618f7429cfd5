"""The rollout runner: one task through one unmodified harness, in a sandbox, against the proxy.

    async with RolloutRunner(sessions, ("127.0.0.1", proxy_port), RunnerSettings(...)) as runner:
        rollout = await runner.run(RolloutJob(task, "claude-code", rollout_id="r0"))

Close the runner (`async with`, or `await runner.close()`) before its event loop ends: it owns the
pool of prewarmed sandboxes.

For each rollout, in this order, each stage writing down what happened in a `status.Happened` (no
stage sets the status: `status.decide` settles it once, before the artifacts are written):

    1. materialise the task workspace into <out_dir>/<rollout_id>/workspace    (task files only)
    2. open a proxy session on the runner's session host (`proxy.session_host`: the proxy in this event loop,
       or a proxy process of this worker, which journals the calls into the rollout's folder); the
       harness will get `<endpoint inside>/r/<token>` and the token as key. A proxy process that
       dies ends the rollout at once (its journaled calls kept)
    3. create the sandbox (workspace bound rw at the task's mount dir, only the model endpoint
       reachable), or, by default, take a prewarmed one from the pool (`sandbox.pool_size`) and
       copy the workspace in
    4. launch the harness headless; wait up to `timeout_s`; destroy the agent sandbox; parse the
       harness's output (in a thread). A call whose prompt does not fit the context ends the rollout
       at once (`_until_overflow`)
    5. close the session (nothing inside can call any more): the captured calls (partial ones
       too: a call still generating is kept as a partial record)
    6. score the final workspace with the task's checker in its own sandbox (reward files copied
       in only now), unless the rollout already failed other than by the harness's own account
    7. settle the status; write the artifacts: rollout.json, calls.jsonl, harness.stdout/.stderr,
       workspace.diff, reward.json, prompt.json (`prompt_check.py`)

The agent sandbox is destroyed before scoring: nothing the agent started can touch the workspace
while the checker reads it. Which status each stage's failure earns and whose fault it is
(`Rollout.fault`) is `status.py`'s to say: whatever untrusted code, its requests or its workspace
could have caused is the policy's, and the rule fails closed by stage rather than by exception type
(once the harness is launched, `Happened.launched`, any exception while reading what it produced is
the policy's failure with reward 0, `status.untrusted_failure`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shutil
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harnessrl.formats.calls import CALLS_FILE
from harnessrl.formats.rollout_dir import AGENT_FOLDERS, write_rollout_head
from harnessrl.harnesses import Endpoint, Harness, McpServer
from harnessrl.harnesses.launch import check_options, configure_harness, exec_harness
from harnessrl.harnesses.registry import get_harness
from harnessrl.protocols import Service
from harnessrl.proxy.session_host import LocalSessions, SessionHost
from harnessrl.proxy.sessions import SessionStore
from harnessrl.rollout.agent_sandbox import AgentSandboxes
from harnessrl.rollout.artifacts import write_artifacts
from harnessrl.rollout.config import KeepFiles
from harnessrl.rollout.environment import task_system
from harnessrl.rollout.prompt_check import PromptCheck, system_of
from harnessrl.rollout.scoring import Scoring
from harnessrl.rollout.status import Happened, crash, decide, internal_error, settle, untrusted_failure
from harnessrl.sandbox import Sandbox
from harnessrl.sandbox.agent_env import resolve_agent_env
from harnessrl.sandbox.config import SandboxConfig
from harnessrl.sandbox.fscopy import remove_tree
from harnessrl.sandbox.spec import ExecResult
from harnessrl.tasks import materialize_workspace
from harnessrl.types import HarnessError, Rollout, RolloutStatus, SandboxError, Task, group_id
from harnessrl.verify import RubricJudge
from harnessrl.verify.command_runner import CommandRunner
from harnessrl.verify.config import VerifyConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RolloutJob:
    """One rollout to run."""

    task: Task
    harness: str
    """Registry name (`harnesses.registry`), e.g. codex or whitebox:01220."""
    rollout_id: str
    group_id: str = ""
    """GRPO group; default `<task id>/<harness>`."""
    options: dict[str, Any] = field(default_factory=dict)
    """Adapter switches (claude-code: `bare`; openclaw: `api`; shell: `command`)."""
    mcp_servers: tuple[McpServer, ...] = ()
    seed: int | None = None
    """Sampling seed of the rollout's calls (`proxy.sessions.Session.seed`); None = the engine's."""
    run: int = 0
    """Which repeat of its (task, harness) pair this is: eval's run index r (0 for a single run)."""


@dataclass(frozen=True)
class RunnerSettings:
    """How every rollout of a runner is run (built from RolloutConfig/SandboxConfig/VerifyConfig)."""

    out_dir: Path
    timeout_s: float = 600.0
    """Agent wall-clock limit."""
    concurrency: int = 4
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    harness_cache: Path | None = None
    """Where harnesses are installed (None = the default cache)."""
    model_name: str | None = None
    """Model name the harness asks for (None = the adapter's default)."""
    keep_agent_files: KeepFiles = "all"
    """`RolloutConfig.keep_agent_files`."""


async def run_all(
    run: Callable[[RolloutJob], Awaitable[Rollout]],
    jobs: Sequence[RolloutJob],
    slots: asyncio.Semaphore,
    on_done: Callable[[Rollout], None] | None,
    prompts: PromptCheck | None = None,
) -> list[Rollout]:
    """`run` every job, at most `slots` at once, calling `on_done` as each ends; results in job order.
    `prompts`: the run's check of each harness's first prompt (PromptChanged once all have ended)."""

    async def one(job: RolloutJob) -> Rollout:
        async with slots:
            rollout = await run(job)
        if on_done is not None:
            on_done(rollout)
        return rollout

    rollouts = list(await asyncio.gather(*(one(j) for j in jobs)))
    return rollouts if prompts is None else prompts.observe(rollouts, [system_of(j.task) for j in jobs])


class RolloutRunner(Service):
    """Runs rollouts against an already running proxy (see the module docstring)."""

    def __init__(
        self,
        sessions: SessionStore | SessionHost | None,
        endpoint: tuple[str, int],
        settings: RunnerSettings,
        *,
        judge: RubricJudge | None = None,
        checker_runner: Callable[[], CommandRunner | None] | None = None,
    ) -> None:
        self.sessions = sessions
        """What sessions open on, as given: this event loop's `SessionStore`, or a proxy process."""
        self.host: SessionHost | None = (
            LocalSessions(sessions) if isinstance(sessions, SessionStore) else sessions
        )
        """The same as a `SessionHost` (`proxy.session_host`)."""
        self.endpoint = endpoint
        self.settings = settings
        self.judge = judge
        self._checker_runner = checker_runner or self._default_checker_runner
        self._slots = asyncio.Semaphore(max(1, settings.concurrency))
        try:
            self.agent_env = resolve_agent_env(settings.sandbox.agent_env)
        except FileNotFoundError as e:
            raise SandboxError(str(e)) from None
        """The sandbox agent environment bound into every sandbox (None: the system python3 only)."""
        self.sandboxes = AgentSandboxes(
            settings.sandbox,
            settings.concurrency,
            lambda: self.endpoint,
            self.agent_env,
            settings.harness_cache,
        )
        """The agents' sandboxes: made (pooled) and destroyed with what they leave kept."""
        self.prompts = PromptCheck()  # each harness's first prompt in this run

    def _default_checker_runner(self) -> CommandRunner | None:
        if self.settings.sandbox.backend != "bwrap":
            return None  # LocalRunner: a separate process, no isolation (the local backend warned already)
        from harnessrl.verify.sandboxed import SandboxCommandRunner

        return SandboxCommandRunner(agent_env=self.agent_env, agent=self.settings.sandbox.agent)

    async def run_many(
        self, jobs: Sequence[RolloutJob], on_done: Callable[[Rollout], None] | None = None
    ) -> list[Rollout]:
        """Run jobs concurrently (at most `concurrency` at once); results in job order."""

        return await run_all(self.run, jobs, self._slots, on_done, self.prompts)

    async def run(self, job: RolloutJob, rdir: Path | None = None) -> Rollout:
        """Run one rollout to exactly one status (in `rdir`, default `out_dir/<rollout id>`); never
        raises for the rollout's own failures.

        The phases (`prepare`, `agent`, `complete`) are public so that a caller can run them apart."""
        if self.host is None:
            raise RuntimeError("this runner has no session host: it only runs phases for a remote driver")
        rollout = await self.prepare(job, rdir)
        happened = Happened(timeout_s=job.task.timeout_s or self.settings.timeout_s)
        try:
            await self._session(self.host, job, rollout, happened)
        except Exception as e:  # still data: the policy's once its harness ran (it made the calls settled)
            happened.crashed = crash(rollout, happened, e)
        return await self.complete(job, rollout, happened)

    async def _session(
        self, host: SessionHost, job: RolloutJob, rollout: Rollout, happened: Happened
    ) -> None:
        """Steps 2-5: open the rollout's proxy session, run the agent until it ends or the session
        does (`_until_overflow`), close the session and keep what it recorded."""
        opened = await host.open(job.rollout_id, job.seed, Path(rollout.workdir) / CALLS_FILE)
        t0 = time.perf_counter()
        try:
            agent = self.agent(job, rollout, opened.token, opened.server_url, happened)
            if not await _until_overflow(agent, opened.ended):
                happened.stopped = True  # at a context overflow or a lost proxy: what it printed is not read
                happened.raw = happened.result = None
        finally:
            rollout.timings["agent"] = round(time.perf_counter() - t0, 3)
            closed = await host.close(job.rollout_id)
            happened.proxy_lost = opened.lost
            happened.calls, happened.dropped = list(closed), closed.dropped
            rollout.calls = happened.calls
            if happened.result is not None:
                rollout.exit_code = happened.result.exit_code
                rollout.final_message = happened.result.final_message

    async def prepare(self, job: RolloutJob, rdir: Path | None = None) -> Rollout:
        """Step 1: a fresh rollout folder (`out_dir/<rollout id>` unless given) with the task's
        workspace (in a thread) and its record."""
        rdir = rdir or self.settings.out_dir / job.rollout_id
        await asyncio.to_thread(_prepare_folder, job.task, rdir)  # file I/O off the proxy's loop
        return Rollout(
            rollout_id=job.rollout_id,
            task_id=job.task.id,
            harness=job.harness,
            group_id=job.group_id or group_id(job.task.id, job.harness),
            started_at=time.time(),
            workdir=str(rdir),
        )

    async def complete(self, job: RolloutJob, rollout: Rollout, happened: Happened) -> Rollout:
        """Steps 6-7 once the session is closed: score the rollout (unless it failed before the
        harness finished, or its final workspace was over the caps), settle its status (`settle`),
        then write its artifacts. Never raises for the rollout's own failures."""
        try:
            failure = decide(happened)
            scorable = failure is None or failure.status is RolloutStatus.HARNESS_ERROR
            # a workspace over the caps was not walked to the end: links past the cap were never
            # checked, so the checker must not see it
            truncated = bool(rollout.reward_detail.get("workspace", {}).get("truncated"))
            if scorable and not truncated and "traceback" not in rollout.reward_detail:
                scoring = Scoring(self.settings.verify, self.judge, self._checker_runner, self.agent_env)
                await scoring.score(job.task, rollout, happened)
        except Exception as e:
            failure = internal_error(rollout, e)
            happened.scoring = happened.scoring or failure
        finally:
            rollout.ended_at = time.time()
            settle(rollout, happened)
            await self._write_artifacts(rollout, happened)
        return rollout

    async def _write_artifacts(self, rollout: Rollout, happened: Happened) -> None:
        """Step 7, in a thread (the diff reads the agent's files). A failure becomes this rollout's
        status (the record is written again without the diff); it never reaches the other rollouts."""
        rdir = Path(rollout.workdir)
        initial = rdir / ".initial"
        try:
            await asyncio.to_thread(write_artifacts, rdir, rollout, happened.raw, initial, rdir / "workspace")
        except Exception as e:
            log.exception("rollout %s: writing artifacts failed", rollout.rollout_id)
            happened.artifacts = repr(e)
            settle(rollout, happened)
            with contextlib.suppress(Exception):
                write_rollout_head(rdir, rollout)
        finally:
            await asyncio.to_thread(shutil.rmtree, initial, True)
            keep = self.settings.keep_agent_files
            if keep == "none" or (keep == "failed" and rollout.status is RolloutStatus.OK):
                for name in AGENT_FOLDERS:  # the agent's trees: removed without following a link
                    await asyncio.to_thread(remove_tree, rdir / name)

    async def agent(
        self, job: RolloutJob, rollout: Rollout, token: str, server_url: str, happened: Happened
    ) -> None:
        """Steps 3-4 against an open session (`token`): sandbox, harness, sandbox teardown, reading the
        harness's output, written down in `happened`; the caller closes the session. Raises only for a
        bug of ours before the harness was launched: after that, any exception is the policy's
        failure (`untrusted_failure`)."""
        try:
            await self._agent(job, rollout, token, server_url, happened)
        except Exception as e:
            if not happened.launched:
                raise
            happened.unreadable = untrusted_failure(
                rollout, RolloutStatus.HARNESS_ERROR, "the agent phase", e
            )

    async def _agent(
        self, job: RolloutJob, rollout: Rollout, token: str, server_url: str, h: Happened
    ) -> None:
        try:
            harness = get_harness(job.harness)
        except (KeyError, HarnessError) as e:
            h.unknown_harness = f"unknown harness {job.harness!r}: {e}"
            return
        try:  # options it cannot take: before any sandbox is made
            check_options(harness, job.options)
        except HarnessError as e:
            h.setup_error = e
            return
        workspace = Path(rollout.workdir) / "workspace"
        try:
            sandbox = await self.sandboxes.open(job.task, workspace)
        except SandboxError as e:
            h.setup_error = e
            return
        h.sandbox_made = True
        inside = sandbox.endpoint_url or server_url
        endpoint = Endpoint(base_url=f"{inside}/r/{token}", api_key=token, model=self.settings.model_name)
        try:
            h.raw = await self._launch(job, harness, sandbox, endpoint, h)
        except (SandboxError, HarnessError) as e:  # its sandbox died under it, or it could not be set up
            h.setup_error = e
        finally:
            h.workspace_over = await self.sandboxes.finish(sandbox, workspace, rollout)
        if h.raw is not None:  # commands can write into the harness's output: read it as theirs
            try:
                h.result = await asyncio.to_thread(harness.parse, h.raw)
            except Exception as e:
                what = "reading the harness's output"
                h.unreadable = untrusted_failure(rollout, RolloutStatus.HARNESS_ERROR, what, e)

    async def _launch(
        self, job: RolloutJob, harness: Harness, sandbox: Sandbox, endpoint: Endpoint, h: Happened
    ) -> ExecResult:
        """Configure the harness in its sandbox for `endpoint`, on the task's system, and run it."""
        launch = await configure_harness(
            harness,
            sandbox,
            endpoint,
            job.task.prompt,
            mcp_servers=job.mcp_servers,
            options=job.options,
            cache_root=self.settings.harness_cache,
        )
        launch = await asyncio.to_thread(task_system(job.task).launch, launch, self.settings.harness_cache)
        h.launched = True  # from here on, untrusted code runs
        return await exec_harness(sandbox, launch, job.task.timeout_s or self.settings.timeout_s)

    async def close(self) -> None:
        """Destroy the prewarmed sandboxes of every pool (rollouts in flight keep theirs)."""
        await self.sandboxes.close()

    async def stop(self) -> None:
        """`close`, when `async with` leaves the runner."""
        await self.close()


def _prepare_folder(task: Task, rdir: Path) -> None:
    """A fresh `rdir` with the task's `workspace/` and a pristine copy of it (`.initial/`, for the diff)."""
    if rdir.exists():
        remove_tree(rdir)  # a previous run's workspace: the agent's, any depth
    rdir.mkdir(parents=True)
    materialize_workspace(task, rdir / "workspace")
    shutil.copytree(rdir / "workspace", rdir / ".initial", symlinks=True)


async def _until_overflow(launched: Coroutine[Any, Any, None], overflow: asyncio.Event) -> bool:
    """Run the harness until it ends (True), or until its session ended (`OpenSession.ended`: a call
    overflowed the context, or the proxy process serving it died): then the harness is cancelled (its
    sandbox is destroyed by the caller) and False comes back. A harness would otherwise retry the 400
    (or give up only after many calls): a prompt that does not fit will not fit on the next try
    either; and a dead proxy answers nothing."""
    task = asyncio.ensure_future(launched)
    watcher = asyncio.ensure_future(overflow.wait())
    try:
        await asyncio.wait({task, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if task.cancelled():
        return False
    task.result()
    return True
