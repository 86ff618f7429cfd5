"""`SandboxCommandRunner`: the verifier's CommandRunner, running each command in a fresh sandbox.

Used to run checkers with the reward files after the agent has finished. What the command can see:
the read-only system, the running interpreter's prefixes (the checker's python and its packages),
`cwd` read-write at its own path, and the folders of the absolute paths on the command line (the
final workspace; a script's folder) read-write at their own paths (see `named_dirs`). Nothing else of
the host, and no network. Paths are kept identical inside and out so the verifier's command line
needs no rewriting.

The protocol is synchronous (checkers run in worker threads); each call runs its own event loop, in a
helper thread when the calling thread already runs one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping, Sequence
from pathlib import Path

from harnessrl.sandbox.bwrap import python_prefixes
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import SandboxSpec
from harnessrl.types import SandboxError
from harnessrl.verify.runner import RunOutput

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
    """CommandRunner: one fresh bubblewrap sandbox per command. SandboxError becomes returncode 125."""

    def __init__(self, memory_mb: int | None = 4096, backend: str = "bwrap") -> None:
        self.memory_mb = memory_mb
        self.backend = backend

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> RunOutput:
        coro = self._run(list(argv), Path(cwd).resolve(), dict(env), timeout_s)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coro)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, coro).result()

    async def _run(self, argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> RunOutput:
        spec = SandboxSpec(
            backend="local" if self.backend == "local" else "bwrap",
            workspace=cwd,
            mount_dir=str(cwd),
            rw_binds=named_dirs(argv, cwd),
            bind_python=True,
            memory_mb=self.memory_mb,
        )
        try:
            async with await Sandbox.create(spec) as sb:
                res = await sb.exec(argv, env=env, cwd=str(cwd), timeout_s=timeout_s, grace_s=1.0)
        except SandboxError as e:
            return RunOutput(125, "", f"sandbox error: {e}", False)
        stderr = res.stderr if not res.error else f"{res.stderr}{res.error}\n"
        return RunOutput(res.returncode, res.stdout, stderr, res.timed_out)
