"""Build everything a batch of rollouts needs from its config sections (`RolloutSections`), in one place
(used by `rollout`, `train`, `evaluate`).

    async with RolloutStack.from_config(cfg, tasks) as stack:
        rollouts = await stack.runner.run_many(jobs)

The stack owns the engine, the chat format, the proxy server (in this event loop) and the runner; or,
when the sessions live in proxy processes (`rollout.backend = "ray"`, or `proxy.processes` > 0), the
engine server those processes call (`rollout.serving`) instead of the proxy in this loop.
With `engine.type = "scripted"` and no `engine.script`, every task is answered by its reference
solution as a single action (a multi-step task: one action per step, `reference_steps`) through the
chosen harness's own shell tool, then its way of finishing
(the adapter's `reference_engine`: the known-good sequence used to check a harness end to end). The
`shell` harness runs its own `command` option; a call it makes is answered "done".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from harnessrl.engines.serve import EngineServer
from harnessrl.harnesses.registry import get_harness
from harnessrl.protocols import Engine
from harnessrl.proxy.deps import default_deps
from harnessrl.proxy.server import ProxyServer
from harnessrl.proxy.sessions import SessionStore
from harnessrl.rollout.config import RolloutSections
from harnessrl.rollout.environment import prepare_environments
from harnessrl.rollout.runner import RolloutJob, RolloutRunner, RunnerSettings
from harnessrl.rollout.serving import remote_sessions, start_remote
from harnessrl.tasks.clawgym_folder import STEPS_MARK
from harnessrl.types import EngineError, HarnessError, Rollout, Task
from harnessrl.verify.harbor import preflight


def _reference_lines(task: Task) -> list[str]:
    """The reference script's lines, the `#!` line and blank lines left out."""
    if task.reference is None:
        raise EngineError(f"task {task.id!r} has no reference solution to script")
    ref = task.reference
    text = ref.content if ref.content is not None else ref.source.read_text() if ref.source else ""
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#!")]


def reference_command(task: Task) -> str:
    """The task's reference solution as one shell command line (`bash -c '<solve.sh>'`)."""
    body = "\n".join(_reference_lines(task))
    if "\n" not in body:
        return body
    return "bash -c " + "'" + body.replace("'", "'\\''") + "'"


def reference_steps(task: Task) -> list[str]:
    """The reference as the commands a scripted engine sends, one per call: each line of a script
    marked `STEPS_MARK` (multi-step task families), else `[reference_command(task)]`."""
    lines = _reference_lines(task)
    if lines and lines[0] == STEPS_MARK:
        return lines[1:]
    return [reference_command(task)]


def reference_engine(cfg: RolloutSections, tasks: list[Task], harness: str) -> Engine:
    """A scripted engine answering each task (matched by its prompt) with its reference solution,
    through the harness's own shell tool (the adapter's `reference_engine`)."""
    from harnessrl.chat.format import ChatFormat
    from harnessrl.engines.models import load_tokenizer

    try:
        adapter = get_harness(harness)
    except HarnessError as e:
        raise EngineError(f"no reference engine: {e}") from None
    fmt = ChatFormat(load_tokenizer(cfg.engine.model))
    # A harness without a shell tool (`shell`: it runs its own command) needs no reference solution.
    scripts = [(t.prompt, reference_steps(t)) for t in tasks] if adapter.shell_tool is not None else []
    # The proxy's length check, as for a real model.
    return adapter.reference_engine(fmt, scripts, max_context=cfg.engine.context_length)


def build_engine_for(cfg: RolloutSections, tasks: list[Task]) -> Engine:
    from harnessrl.engines import build_engine

    if cfg.engine.type == "scripted" and cfg.engine.script is None:
        return reference_engine(cfg, tasks, cfg.rollout.harness)
    return build_engine(cfg.engine)


class Runner(Protocol):
    """What a rollout backend offers: `RolloutRunner` (asyncio) or `RayRolloutRunner`."""

    async def run_many(
        self, jobs: Sequence[RolloutJob], on_done: Callable[[Rollout], None] | None = None
    ) -> list[Rollout]: ...

    async def close(self) -> None: ...


@dataclass
class RolloutStack:
    """Engine + proxy (or engine server and proxy processes) + runner, started and stopped together."""

    cfg: RolloutSections
    engine: Engine
    server: ProxyServer
    """The proxy in this event loop (not started when the sessions live in proxy processes)."""
    runner: Runner | None = None
    """The rollout backend (`rollout.backend`), set on entering."""
    engine_server: EngineServer | None = None
    """The engine served to proxy processes (`rollout.serving`), when they serve the sessions."""

    @classmethod
    def from_config(
        cls, cfg: RolloutSections, tasks: list[Task], engine: Engine | None = None
    ) -> RolloutStack:
        from harnessrl.chat.format import ChatFormat

        preflight(tasks, cfg.verify.allow_verifier_network)  # before any rollout: what cannot be verified
        prepare_environments(tasks)  # every task's image ready, or its one-line ImageError
        engine = engine or build_engine_for(cfg, tasks)
        sessions = SessionStore(capture_dir=None)
        deps = default_deps(
            engine, ChatFormat(engine.tokenizer), sessions, config=cfg.proxy, sampling=cfg.engine.sampling
        )
        return cls(cfg=cfg, engine=engine, server=ProxyServer(deps))

    async def __aenter__(self) -> RolloutStack:
        settings = RunnerSettings(
            out_dir=Path(self.cfg.rollout.out_dir),
            timeout_s=self.cfg.rollout.timeout_s,
            concurrency=self.cfg.rollout.concurrency,
            sandbox=self.cfg.sandbox,
            verify=self.cfg.verify,
            keep_agent_files=self.cfg.rollout.keep_agent_files,
        )
        if remote_sessions(self.cfg.rollout, self.cfg.proxy):
            sampling = self.cfg.engine.sampling
            self.engine_server, self.runner = await start_remote(
                self.engine, self.cfg.rollout, self.cfg.proxy, sampling, settings
            )
            return self
        await self.server.start()
        host = "127.0.0.1" if self.server.host in ("0.0.0.0", "") else self.server.host
        self.runner = RolloutRunner(self.server.deps.sessions, (host, self.server.port), settings)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.runner is not None:
            await self.runner.close()
        await self.server.stop()
        if self.engine_server is not None:
            await self.engine_server.stop()
        close: Any = getattr(self.engine, "close", None)
        if close is not None:
            await close()
