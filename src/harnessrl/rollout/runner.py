"""The rollout runner: one task through one unmodified harness, in a sandbox, against the proxy.

    async with RolloutRunner(sessions, ("127.0.0.1", proxy_port), RunnerSettings(...)) as runner:
        rollout = await runner.run(RolloutJob(task, "claude-code", rollout_id="r0"))

Close the runner (`async with`, or `await runner.close()`) before its event loop ends: it owns the
pool of prewarmed sandboxes.

For each rollout, in this order (every step's failure becomes a status, never an exception):

    1. materialise the task workspace into <out_dir>/<rollout_id>/workspace    (task files only)
    2. open a proxy session on the runner's session host (`proxy.session_host`: the proxy in this event loop,
       or a proxy process of this worker, which journals the calls into the rollout's folder); the
       harness will get `<endpoint inside>/r/<token>` and the token as key. A proxy process that
       dies ends the rollout at once: engine_error (infra), its journaled calls kept
    3. create the sandbox (workspace bound rw at the task's mount dir, only the model endpoint
       reachable), or, by default, take a prewarmed one from the pool (`sandbox.pool_size`) and
       copy the workspace in                                         -> sandbox_error (infra)
    4. launch the harness headless; wait up to `timeout_s`; destroy the agent sandbox; parse the
       harness's output (in a thread)    -> timeout / harness_error / sandbox_error (it died under
       the harness: policy). A call whose prompt does not fit the context ends the rollout at once
       (`_until_overflow`)
    5. close the session (nothing inside can call any more): the captured calls (partial ones
       too: a call still generating is kept as a partial record)    -> engine_error if a call failed
       in the engine (infra), or its record was lost or it overflowed the context (policy; an
       overflow of the first call is infra: the harness's own prompt does not fit); this
       wins over the harness's own account (`status.status_from_calls`)
    6. score the final workspace with the task's checker in its own sandbox (reward files copied
       in only now)              -> verifier_error (the checker failed on the workspace: policy;
       no score could be had: infra)
    7. write the artifacts: rollout.json, calls.jsonl, harness.stdout/.stderr, workspace.diff,
       reward.json

The agent sandbox is destroyed before scoring: nothing the agent started can touch the workspace
while the checker reads it. Statuses follow DESIGN invariant 3 (exactly one per rollout). `fault`
says who caused a failure (`Rollout.fault`): whatever untrusted code, its requests or its workspace
could have caused is the policy's, so that `train.failures` trains it with reward 0 and no failure
is a way out of an honest 0. The rule fails closed, by stage rather than by exception type: once the
harness is launched (`AgentOutcome.launched`), any exception while reading what it produced (its
output, its calls, its workspace, the checker's and the judge's verdicts on it, the artifacts) is
the policy's failure with reward 0 and the exception's type in the reason (`status.policy_faults`);
only the typed errors that say no score could be had (VerifierError: an unreachable judge, a
checker sandbox that could not be made) and what broke before the launch are infrastructure.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from harnessrl.formats.calls import CALLS_FILE
from harnessrl.formats.rollout_dir import write_rollout_head
from harnessrl.harnesses import Endpoint, HarnessResult, McpServer
from harnessrl.harnesses.launch import check_options, configure_harness, exec_harness
from harnessrl.harnesses.registry import get_harness
from harnessrl.proxy.session_host import LocalSessions, SessionHost
from harnessrl.proxy.sessions import SessionStore
from harnessrl.rollout.agent_sandbox import AgentSandboxes
from harnessrl.rollout.artifacts import write_artifacts
from harnessrl.rollout.environment import task_system
from harnessrl.rollout.status import (
    internal_error,
    policy_faults,
    proxy_lost,
    set_status,
    settle,
    untrusted_failure,
)
from harnessrl.sandbox.agent_env import resolve_agent_env
from harnessrl.sandbox.config import SandboxConfig
from harnessrl.sandbox.fscopy import remove_tree
from harnessrl.sandbox.spec import ExecResult
from harnessrl.tasks import materialize_workspace
from harnessrl.types import (
    HarnessError,
    ModelCall,
    Rollout,
    RolloutStatus,
    SandboxError,
    SandboxLost,
    Task,
    TaskError,
    VerifierError,
    group_id,
)
from harnessrl.verify import RubricJudge, score_task
from harnessrl.verify.command_runner import CommandRunner
from harnessrl.verify.config import VerifyConfig

log = logging.getLogger(__name__)
T = TypeVar("T")


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


@dataclass
class AgentOutcome:
    """What the agent phase hands back: the harness's parsed result and its raw output (None when it
    never ran, or its output could not be read), and whether it was launched (untrusted code ran)."""

    result: HarnessResult | None = None
    raw: ExecResult | None = None
    launched: bool = False


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


async def run_all(
    run: Callable[[RolloutJob], Awaitable[Rollout]],
    jobs: Sequence[RolloutJob],
    slots: asyncio.Semaphore,
    on_done: Callable[[Rollout], None] | None,
) -> list[Rollout]:
    """`run` every job, at most `slots` at once, calling `on_done` as each ends; results in job order."""

    async def one(job: RolloutJob) -> Rollout:
        async with slots:
            rollout = await run(job)
        if on_done is not None:
            on_done(rollout)
        return rollout

    return list(await asyncio.gather(*(one(j) for j in jobs)))


class RolloutRunner:
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

    def _default_checker_runner(self) -> CommandRunner | None:
        if self.settings.sandbox.backend != "bwrap":
            return None  # LocalRunner: a separate process, no isolation (the local backend warned already)
        from harnessrl.verify.sandboxed import SandboxCommandRunner

        return SandboxCommandRunner(agent_env=self.agent_env, agent=self.settings.sandbox.agent)

    async def run_many(
        self, jobs: Sequence[RolloutJob], on_done: Callable[[Rollout], None] | None = None
    ) -> list[Rollout]:
        """Run jobs concurrently (at most `concurrency` at once); results in job order."""

        return await run_all(self.run, jobs, self._slots, on_done)

    async def run(self, job: RolloutJob, rdir: Path | None = None) -> Rollout:
        """Run one rollout to exactly one status (in `rdir`, default `out_dir/<rollout id>`); never
        raises for the rollout's own failures.

        The phases (`prepare`, `agent`, `complete`) are public so that a caller can run them apart."""
        if self.host is None:
            raise RuntimeError("this runner has no session host: it only runs phases for a remote driver")
        rollout = await self.prepare(job, rdir)
        outcome: AgentOutcome | None = AgentOutcome()  # None: stopped at a context overflow or a lost proxy
        try:
            opened = await self.host.open(job.rollout_id, job.seed, Path(rollout.workdir) / CALLS_FILE)
            t0 = time.perf_counter()
            try:
                outcome = await _until_overflow(
                    self.agent(job, rollout, opened.token, opened.server_url), opened.ended
                )
            finally:
                rollout.timings["agent"] = round(time.perf_counter() - t0, 3)
                closed = await self.host.close(job.rollout_id)
                if opened.lost is not None:  # before settle: the first failure wins
                    proxy_lost(rollout, opened.lost)
                timeout_s = job.task.timeout_s or self.settings.timeout_s
                result = None if outcome is None else outcome.result
                settle(rollout, closed, closed.dropped, result, stopped=outcome is None, timeout_s=timeout_s)
        except Exception as e:  # still data: the policy's once its harness ran (it made the calls settled)
            if outcome is None or outcome.launched:
                untrusted_failure(rollout, RolloutStatus.HARNESS_ERROR, "settling the rollout", e)
            else:  # a bug of ours before anything untrusted ran, the traceback kept
                internal_error(rollout, e)
        return await self.complete(job, rollout, None if outcome is None else outcome.raw)

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

    async def complete(self, job: RolloutJob, rollout: Rollout, raw: ExecResult | None) -> Rollout:
        """Steps 6-7 on a settled rollout: score it (unless it failed before the harness finished, or
        its final workspace was over the caps), then write its artifacts. Never raises for the
        rollout's own failures."""
        rdir = Path(rollout.workdir)
        workspace, initial = rdir / "workspace", rdir / ".initial"
        try:
            scorable = rollout.status in (RolloutStatus.OK, RolloutStatus.HARNESS_ERROR)
            # a workspace over the caps was not walked to the end: links past the cap were never
            # checked, so the checker must not see it
            truncated = bool(rollout.reward_detail.get("workspace", {}).get("truncated"))
            if scorable and not truncated and "traceback" not in rollout.reward_detail:
                t0 = time.perf_counter()
                # the checker and the judge read the policy's workspace: whatever breaks them is its
                # failure (reward 0); only a verdict that could not be had at all is infra
                with policy_faults(rollout, RolloutStatus.VERIFIER_ERROR, "scoring", infra=(TaskError,)):
                    await self._score(job.task, workspace, rollout)
                rollout.timings["verify"] = round(time.perf_counter() - t0, 3)
        except Exception as e:
            internal_error(rollout, e)
        finally:
            rollout.ended_at = time.time()
            await self._write_artifacts(rdir, rollout, raw, initial, workspace)
        return rollout

    async def _write_artifacts(
        self, rdir: Path, rollout: Rollout, raw: ExecResult | None, initial: Path, workspace: Path
    ) -> None:
        """Step 7, in a thread (the diff reads the agent's files). A failure becomes this rollout's
        status (the record is written again without the diff); it never reaches the other rollouts."""
        try:
            await asyncio.to_thread(write_artifacts, rdir, rollout, raw, initial, workspace)
        except Exception as e:
            log.exception("rollout %s: writing artifacts failed", rollout.rollout_id)
            # the diff reads the agent's files: whatever breaks it is the policy's to answer for
            why = f"artifacts could not be written: {e!r}"
            set_status(rollout, RolloutStatus.HARNESS_ERROR, why, policy=True)
            with contextlib.suppress(Exception):
                write_rollout_head(rdir, rollout)
        finally:
            await asyncio.to_thread(shutil.rmtree, initial, True)

    async def agent(self, job: RolloutJob, rollout: Rollout, token: str, server_url: str) -> AgentOutcome:
        """Steps 2-4 against an open session (`token`): sandbox, harness, sandbox teardown, reading the
        harness's output. Sets the status of sandbox and harness failures; the caller closes the
        session and `settle`s. Raises only for a bug of ours before the harness was launched: after
        that, any exception is the policy's failure (`untrusted_failure`)."""
        outcome = AgentOutcome()
        try:
            await self._agent(job, rollout, token, server_url, outcome)
        except Exception as e:
            if not outcome.launched:
                raise
            untrusted_failure(rollout, RolloutStatus.HARNESS_ERROR, "the agent phase", e)
        return outcome

    async def _agent(
        self, job: RolloutJob, rollout: Rollout, token: str, server_url: str, outcome: AgentOutcome
    ) -> None:
        try:
            harness = get_harness(job.harness)
        except (KeyError, HarnessError) as e:
            set_status(rollout, RolloutStatus.HARNESS_ERROR, f"unknown harness {job.harness!r}: {e}")
            return
        try:  # options it cannot take: before any sandbox is made
            check_options(harness, job.options)
        except HarnessError as e:
            set_status(rollout, RolloutStatus.HARNESS_ERROR, str(e))
            return
        workspace = Path(rollout.workdir) / "workspace"
        try:
            sandbox = await self.sandboxes.open(job.task, workspace)
        except SandboxError as e:
            set_status(rollout, RolloutStatus.SANDBOX_ERROR, str(e))
            return
        try:
            inside = sandbox.endpoint_url or server_url
            endpoint = Endpoint(base_url=f"{inside}/r/{token}", api_key=token, model=self.settings.model_name)
            launch = await configure_harness(
                harness,
                sandbox,
                endpoint,
                job.task.prompt,
                mcp_servers=job.mcp_servers,
                options=job.options,
                cache_root=self.settings.harness_cache,
            )
            launch = await asyncio.to_thread(
                task_system(job.task).launch, launch, self.settings.harness_cache
            )
            outcome.launched = True  # from here on, untrusted code runs
            outcome.raw = await exec_harness(sandbox, launch, job.task.timeout_s or self.settings.timeout_s)
        except SandboxLost as e:  # it died under the harness: a command can end its own sandbox
            set_status(rollout, RolloutStatus.SANDBOX_ERROR, str(e), policy=True)
        except SandboxError as e:
            set_status(rollout, RolloutStatus.SANDBOX_ERROR, str(e))
        except HarnessError as e:  # it could not be installed or configured
            set_status(rollout, RolloutStatus.HARNESS_ERROR, str(e))
        finally:
            await self.sandboxes.finish(sandbox, workspace, rollout)
        if outcome.raw is not None:  # commands can write into the harness's output: read it as theirs
            with policy_faults(rollout, RolloutStatus.HARNESS_ERROR, "reading the harness's output"):
                outcome.result = await asyncio.to_thread(harness.parse, outcome.raw)

    async def close(self) -> None:
        """Destroy the prewarmed sandboxes of every pool (rollouts in flight keep theirs)."""
        await self.sandboxes.close()

    async def __aenter__(self) -> RolloutRunner:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def _score(self, task: Task, workspace: Path, rollout: Rollout) -> None:
        """Step 6: the checker (and judge) on the final workspace; failures -> verifier_error: the
        policy's when the checker ran and failed on its workspace (garbage can make a checker raise,
        hang or die), the infrastructure's when no score could be had at all (VerifierError)."""
        changes, root = task_system(task).scoring(Path(rollout.workdir), self.agent_env)
        try:
            score = await score_task(
                task,
                changes,
                self.settings.verify,
                judge=self.judge,
                transcript=_transcript(rollout.calls),
                runner=self._checker_runner(),
                root=root,
            )
        except VerifierError as e:
            rollout.reward = 0.0
            set_status(rollout, RolloutStatus.VERIFIER_ERROR, str(e))
            return
        rollout.reward = score.reward
        rollout.reward_detail.update(score.detail)
        code = score.detail.get("code") or {}
        if code.get("error") and rollout.status is RolloutStatus.OK:
            set_status(rollout, RolloutStatus.VERIFIER_ERROR, f"checker: {code['error']}", policy=True)


def _prepare_folder(task: Task, rdir: Path) -> None:
    """A fresh `rdir` with the task's `workspace/` and a pristine copy of it (`.initial/`, for the diff)."""
    if rdir.exists():
        remove_tree(rdir)  # a previous run's workspace: the agent's, any depth
    rdir.mkdir(parents=True)
    materialize_workspace(task, rdir / "workspace")
    shutil.copytree(rdir / "workspace", rdir / ".initial", symlinks=True)


async def _until_overflow(launched: Coroutine[Any, Any, T], overflow: asyncio.Event) -> T | None:
    """Run the harness until it ends, or until its session ended (`OpenSession.ended`: a call
    overflowed the context, or the proxy process serving it died): then the harness is cancelled (its
    sandbox is destroyed by the caller) and None comes back. A harness would otherwise retry the 400
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
        return None
    return task.result()


def _transcript(calls: list[ModelCall]) -> list[dict[str, Any]]:
    """What ClawGym checkers get as `transcript`: the assistant turns, in order."""
    return [
        {"role": "assistant", "content": c.text, "tool_calls": [t.model_dump() for t in c.tool_calls]}
        for c in calls
    ]


def summarize(rollouts: Sequence[Rollout]) -> dict[str, Any]:
    """Counts per status label, mean reward over ok rollouts, calls and tokens (for logs and tables)."""
    counts: dict[str, int] = {}
    for r in rollouts:
        counts[r.status_label] = counts.get(r.status_label, 0) + 1
    ok = [r.reward for r in rollouts if r.status is RolloutStatus.OK and r.reward is not None]
    return {
        "rollouts": len(rollouts),
        "status": counts,
        "mean_reward_ok": sum(ok) / len(ok) if ok else None,
        "calls": sum(len(r.calls) for r in rollouts),
        "output_tokens": sum(len(c.output_ids) for r in rollouts for c in r.calls),
    }


def dump_summary(rollouts: Sequence[Rollout], path: Path) -> None:
    path.write_text(json.dumps(summarize(rollouts), indent=2) + "\n", encoding="utf-8")
