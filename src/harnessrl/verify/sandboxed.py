"""`SandboxCommandRunner`: the verifier's CommandRunner, running each command in a fresh sandbox.

Checkers (`run_checker`) see what upstream ClawGym gives them: the final workspace at the task's
mount dir (`/root/.openclaw/workspace`), cwd `/`, HOME `/root`, the checker files read-only at
`/opt/harnessrl/checker`, the checker's python and its packages read-only, no network, and a result
channel (a sealable memory file the host opened, `verify.command_runner.result_channel`) as fd 3. The
workspace they see is a copy of the final one on the sandbox's own size- and inode-limited tmpfs
(`SandboxSpec.disk_mb`, `max_files`, as a rollout's), made by `fscopy.copy_untrusted`'s rules and
caps and handed to the sandbox's unprivileged uid: code the checker runs once wrote 150,000 files and
300 MiB through a read-write bind of the host's workspace, and they stayed. What it writes now goes
with the sandbox, the host's workspace is never changed (a judge that reads it after the checker sees
what the agent left), and nothing the checker or the agent's code it runs can do reaches the host's
copy of the checker files. A workspace that does not fit under the caps is never scored (returncode
125, the checker's failure on the agent's workspace).

Other commands (`run`: reference solutions) see `cwd` read-write at its own path and the folders of
the absolute paths on the command line (the final workspace; a script's folder) read-write at their
own paths (see `named_dirs`). Nothing else of the host, and no network.

The protocol is synchronous (checkers run in worker threads); each call runs its own event loop, in a
helper thread when the calling thread already runs one.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from harnessrl.sandbox.bwrap import python_prefixes
from harnessrl.sandbox.fscopy import copy_untrusted
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import SandboxSpec
from harnessrl.sandbox.sync import run_sync
from harnessrl.types import SandboxError, VerifierError
from harnessrl.verify.command_runner import (
    CheckerJob,
    RunOutput,
    checker_env,
    driver_argv,
    read_report,
    result_channel,
)

CHECKER_DIR = "/opt/harnessrl/checker"

SYSTEM_ROOTS = tuple(
    Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/proc", "/dev", "/sys")
)


def named_dirs(argv: Sequence[str], cwd: Path) -> tuple[Path, ...]:
    """Folders to bind for the absolute paths in argv: a named folder itself, a named file's parent.

    Skipped: what is under cwd (bound anyway), system folders, the interpreter's prefixes (bound
    read-only by `bind_python`), and top-level folders such as /tmp or /root (binding those would hand
    the command every other sandbox's files).
    """
    skip = (*SYSTEM_ROOTS, *(Path(p) for p in python_prefixes()))
    found: dict[Path, None] = {}
    for arg in argv:
        if not arg.startswith("/"):
            continue
        path = Path(arg).resolve()
        folder = path if path.is_dir() else path.parent
        if not folder.is_dir() or len(folder.parts) <= 2 or folder.is_relative_to(cwd):
            continue
        if not any(folder.is_relative_to(s) for s in skip):
            found[folder] = None
    return tuple(found)


class SandboxCommandRunner:
    """CommandRunner: one fresh bubblewrap sandbox per command. SandboxError becomes returncode 125,
    except that a checker whose sandbox cannot be created raises VerifierError (it never ran).

    With `agent_env` (the sandbox agent environment, `sandbox.agent_env`), that tree is bound
    read-only, its `bin/` is first on PATH and checkers run with its python (the agent's python:
    what the agent could run is what is scored)."""

    def __init__(
        self,
        memory_mb: int | None = 4096,
        backend: str = "bwrap",
        agent_env: Path | None = None,
        agent: Literal["auto", "native", "python"] = "auto",
    ) -> None:
        self.memory_mb = memory_mb
        self.backend = backend
        self.agent_env = agent_env
        self.agent: Literal["auto", "native", "python"] = agent
        """SandboxSpec.agent of the checker's sandboxes."""

    def _env_binds(self) -> tuple[tuple[Path, ...], tuple[str, ...]]:
        if self.agent_env is None:
            return (), ()
        return (self.agent_env,), (str(self.agent_env / "bin"),)

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> RunOutput:
        spec = SandboxSpec(
            backend="local" if self.backend == "local" else "bwrap",
            workspace=Path(cwd).resolve(),
            mount_dir=str(Path(cwd).resolve()),
            rw_binds=named_dirs(argv, Path(cwd).resolve()),
            ro_binds=self._env_binds()[0],
            path_prefix=self._env_binds()[1],
            bind_python=True,
            memory_mb=self.memory_mb,
            agent=self.agent,
        )
        out, _ = run_sync(self._run(spec, list(argv), dict(env), str(Path(cwd).resolve()), timeout_s, None))
        return out

    def run_in(
        self, spec: SandboxSpec, argv: Sequence[str], env: Mapping[str, str], cwd: str, timeout_s: float
    ) -> RunOutput:
        """Run `argv` in a fresh sandbox of `spec` (a Harbor task's reference, at its workdir)."""
        out, _ = run_sync(self._run(spec, list(argv), dict(env), cwd, timeout_s, None))
        return out

    def run_checker(self, job: CheckerJob) -> tuple[RunOutput, bytes | None]:
        if self.agent_env is not None:
            job = dataclasses.replace(job, python=str(self.agent_env / "bin" / "python"))
        if self.backend == "local":
            from harnessrl.verify.command_runner import LocalRunner

            return LocalRunner().run_checker(job)
        binds, prefix = self._env_binds()
        spec = SandboxSpec(
            mount_dir=job.mount_dir,
            home_dir="/root",
            ro_mounts=((job.folder, CHECKER_DIR),),
            ro_binds=binds,
            path_prefix=prefix,
            bind_python=True,
            memory_mb=self.memory_mb,
            agent=self.agent,
        )
        argv = driver_argv(job.python, CHECKER_DIR, job.entry, job.mount_dir, 3, confine=True)
        env = checker_env("/root", job.python)
        return self.run_sealed(
            spec, argv, env, "/", job.timeout_s, lambda sb: load_workspace(sb, job.workspace)
        )

    def run_sealed(
        self,
        spec: SandboxSpec,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str,
        timeout_s: float,
        load: Callable[[Sandbox], str],
    ) -> tuple[RunOutput, bytes | None]:
        """Run a driver (`_driver.py`) in a fresh sandbox of `spec`, after
        `load(sandbox)` put what it scores in (in a thread; it returns why it refused, or ""), with a
        result channel as fd 3: (the outcome, `read_report` of the channel). VerifierError when the
        sandbox cannot be created (the driver never ran)."""
        return run_sync(self._run(spec, list(argv), dict(env), cwd, timeout_s, load))

    async def _run(
        self,
        spec: SandboxSpec,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        timeout_s: float,
        load: Callable[[Sandbox], str] | None,
    ) -> tuple[RunOutput, bytes | None]:
        """Run `argv` in a fresh sandbox. With `load` (a checker run): let it fill the sandbox first
        (what it refuses is returncode 125) and hand the command a result channel as fd 3."""
        channel = load is not None
        result_fd = result_channel() if channel else None
        try:
            try:
                sb = await Sandbox.create(spec)
            except SandboxError as e:
                if channel:  # the checker never ran: its failure says nothing about the workspace
                    raise VerifierError(f"the checker's sandbox could not be created: {e}") from e
                return RunOutput(125, "", f"sandbox error: {e}", False), None
            try:
                async with sb:
                    if load is not None:
                        refused = await asyncio.to_thread(load, sb)
                        if refused:
                            return RunOutput(125, "", refused, False), None
                    extra = () if result_fd is None else (result_fd,)
                    res = await sb.exec(
                        argv, env=env, cwd=cwd, timeout_s=timeout_s, grace_s=1.0, extra_fds=extra
                    )
            except SandboxError as e:  # it died under the command (the command's doing, or its code's)
                return RunOutput(125, "", f"sandbox error: {e}", False), None
            raw = None if result_fd is None else read_report(result_fd)
        finally:
            if result_fd is not None:
                os.close(result_fd)
        stderr = res.stderr if not res.error else f"{res.stderr}{res.error}\n"
        return RunOutput(res.returncode, res.stdout, stderr, res.timed_out), raw


def load_workspace(sb: Sandbox, source: Path) -> str:
    """Copy `source` (the final workspace, the agent's) into `sb`'s own workspace, on its tmpfs, under
    the spec's caps, and hand it to the sandbox's uid. Returns why it was refused, or ""."""
    stage = sb.root / "ws-in"  # on the same filesystem as the workspace: entries move by rename
    max_bytes = (sb.spec.disk_mb or 1 << 20) * 2**20
    try:
        report = copy_untrusted(source, stage, max_files=sb.spec.max_files, max_bytes=max_bytes)
        if report.truncated:
            return f"the workspace does not fit in the checker's sandbox: {report.truncated}"
        for entry in os.scandir(stage):
            os.rename(entry.path, sb.host_workspace / entry.name)
        stage.rmdir()
    except OSError as e:  # ENOSPC, EDQUOT: the sandbox's own tmpfs is full
        return f"the workspace does not fit in the checker's sandbox: {e}"
    sb.hand_over(sb.host_workspace)
    return ""
