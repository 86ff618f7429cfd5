"""One ephemeral sandbox per rollout: create, run commands in it, destroy it on every exit path.

    async with await Sandbox.create(SandboxSpec(endpoint=("127.0.0.1", proxy_port))) as sb:
        (sb.host_workspace / "in.txt").write_text("...")       # fill the workspace from the host
        res = await sb.exec(["sh", "-c", "cat in.txt"], timeout_s=60)
        # inside, the model endpoint is sb.endpoint_url (http://127.0.0.1:18080)

A sandbox is a folder (home, tmp, io, sock, and the workspace unless one is given) plus one long-lived
agent process (`_agent.py`) started inside bubblewrap; commands are sent to it over a pipe, so a
command costs a fork, not a new sandbox. Killing bwrap kills pid 1 of the sandbox's pid namespace and
with it every process inside, daemons included. Teardown runs from `destroy()`, `async with`, and a
`weakref.finalize` fallback if the object is dropped or the interpreter exits.

The `local` backend runs the same agent directly on the host with no isolation at all: no mount or
network namespace, the workspace is the host folder itself, and a daemonised child can escape. It logs
a warning every time one is created and is only used when a caller asks for it by name.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from harnessrl.sandbox import bwrap
from harnessrl.sandbox.forward import UnixToTcpForwarder
from harnessrl.sandbox.protocol import read_frame, write_frame
from harnessrl.sandbox.spec import ExecResult, SandboxSpec
from harnessrl.types import SandboxError

log = logging.getLogger(__name__)
AGENT_FILE = Path(__file__).with_name("_agent.py")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_ids = itertools.count()
MAX_OUTPUT_BYTES = 32 * 1024 * 1024
"""Most of one stream kept by exec(): the first MiB and the rest from the end (harnesses print their
final result last), with a marker saying how much was cut."""


def read_output(path: Path, limit: int = MAX_OUTPUT_BYTES) -> str:
    """A command's stdout/stderr file, cut in the middle when over `limit` bytes; "" if missing."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(0)
            if size <= limit:
                data = fh.read()
            else:
                head = fh.read(1 << 20)
                fh.seek(size - (limit - len(head)))
                cut = f"\n[... {size - limit} bytes cut by harnessrl ...]\n".encode()
                data = head + cut + fh.read()
    except FileNotFoundError:
        return ""
    return data.decode(errors="replace")


def default_base_dir() -> Path:
    """See SandboxSpec.base_dir."""
    env = os.environ.get("HARNESSRL_SANDBOX_DIR")
    if env:
        return Path(env)
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / "harnessrl"
    return Path(tempfile.gettempdir())


def sweep_stale(base: Path | None = None) -> int:
    """Remove sandbox folders whose creating process is gone (a host killed with SIGKILL runs no
    finaliser: its sandboxes' processes die with it, their folders stay). Returns how many went.
    Runs once per process on the first create; a folder without an owner file is left alone."""
    removed = 0
    root = base or default_base_dir()
    for folder in root.glob("hrl-sb-*") if root.is_dir() else []:
        try:
            pid = int((folder / "owner").read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
        except PermissionError:
            pass
    return removed


_swept: set[Path] = set()
_compiled: dict[tuple[str, Path], Path] = {}
_COMPILE = "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)"


def compiled_agent(python: str, base: Path | None = None) -> Path:
    """`_agent.py` compiled to a .pyc by the interpreter that will run it, cached in `base` (default:
    the default sandbox folder, whatever folder a sandbox itself uses).

    Running the .pyc saves compiling the agent's source at every sandbox start (~3 ms of ~30 on two
    cores). Compiled once per (interpreter, source) into a file named after both; any failure falls
    back to the source file, which works the same, only slower to start.
    """
    base = base or default_base_dir()
    key = (python, base)
    if key in _compiled:
        return _compiled[key]
    source = AGENT_FILE.read_bytes()
    digest = hashlib.sha256(source + os.path.realpath(python).encode()).hexdigest()[:16]
    target = base / f"agent-{digest}.pyc"
    try:
        base.mkdir(parents=True, exist_ok=True)
        st = target.stat()
        if st.st_uid != os.getuid():  # someone else's file: do not run it
            raise PermissionError(f"{target} is not ours")
    except FileNotFoundError:
        tmp = base / f".agent-{digest}.{os.getpid()}.pyc"
        try:
            subprocess.run(
                [python, "-I", "-S", "-c", _COMPILE, str(AGENT_FILE), str(tmp)],
                check=True,
                capture_output=True,
                timeout=30,
            )
            os.replace(tmp, target)
        except (OSError, subprocess.SubprocessError) as e:
            log.debug("sandbox agent: compiling with %s failed (%s); running the source", python, e)
            tmp.unlink(missing_ok=True)
            target = AGENT_FILE
    except OSError as e:
        log.debug("sandbox agent: %s; running the source", e)
        target = AGENT_FILE
    _compiled[key] = target
    return target


def _kill_and_remove(pid: int | None, root: Path) -> None:
    """Finaliser: SIGKILL the agent's process group (bwrap: the whole pid namespace), remove the folder."""
    if pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    shutil.rmtree(root, ignore_errors=True)


class Sandbox:
    """A running sandbox. Build with `await Sandbox.create(spec)`; single use; destroy when done."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        base = spec.base_dir or default_base_dir()
        base.mkdir(parents=True, exist_ok=True)
        self.root = Path(tempfile.mkdtemp(prefix="hrl-sb-", dir=base))
        self.host_workspace = spec.workspace.resolve() if spec.workspace else self.root / "workspace"
        self.host_home = self.root / "home"
        self.id = self.root.name
        local = spec.backend == "local"
        self.workspace = str(self.host_workspace) if local else spec.mount_dir
        """The workspace path as commands inside see it."""
        self.home = str(self.host_home) if local else spec.home_dir
        """HOME as commands inside see it."""
        self.tmp = str(self.root / "tmp") if local else "/tmp"
        self.endpoint_url: str | None = None
        """Model endpoint root as seen from inside (`http://127.0.0.1:PORT`), None without an endpoint."""
        if spec.endpoint is not None:
            host, port = spec.endpoint if local else ("127.0.0.1", spec.listen_port)
            self.endpoint_url = f"http://{host}:{port}"
        self.forwarder: UnixToTcpForwarder | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._lock = asyncio.Lock()
        self._destroyed = False
        self._finalizer = weakref.finalize(self, _kill_and_remove, None, self.root)

    @classmethod
    async def create(cls, spec: SandboxSpec) -> Sandbox:
        """Build the folders, start the endpoint forwarder and the agent; SandboxError on any failure."""
        try:
            sb = cls(spec)
        except OSError as e:  # the base folder cannot be created or written
            raise SandboxError(f"sandbox folder under {spec.base_dir or default_base_dir()}: {e}") from e
        try:
            await asyncio.wait_for(sb._start(), spec.start_timeout_s)
        except BaseException as e:
            await sb.destroy()
            if isinstance(e, SandboxError):
                raise
            if isinstance(e, (OSError, TimeoutError, asyncio.IncompleteReadError)):
                raise SandboxError(f"sandbox {sb.id} failed to start: {type(e).__name__}: {e}") from e
            raise
        return sb

    async def _start(self) -> None:
        base = self.root.parent
        if base not in _swept:
            _swept.add(base)
            sweep_stale(base)
        (self.root / "owner").write_text(str(os.getpid()))
        for sub in ("home", "tmp", "io", "sock"):
            (self.root / sub).mkdir()
        self.host_workspace.mkdir(parents=True, exist_ok=True)
        (self.root / "hosts").write_text("127.0.0.1 localhost\n::1 localhost\n")
        if self.spec.endpoint is not None and self.spec.backend == "bwrap":
            host, port = self.spec.endpoint
            self.forwarder = UnixToTcpForwarder(self.root / "sock" / "model.sock", host, port)
            await self.forwarder.start()
        python, _ = bwrap.agent_python()
        agent = compiled_agent(python)
        if self.spec.backend == "local":
            log.warning(
                "sandbox %s: LOCAL backend, NO ISOLATION: the agent can read and write the host", self.id
            )
            argv = [python, "-I", "-S", str(agent), "0", "", str(self.root / "io"), "0"]
        else:
            argv = bwrap.build_argv(self.spec, self.root, self.host_workspace, agent, reap_all=True)
        self._proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"},
        )
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _kill_and_remove, self._proc.pid, self.root)
        assert self._proc.stdout is not None
        try:
            hello = await read_frame(self._proc.stdout)
        except asyncio.IncompleteReadError:
            err = b""
            if self._proc.stderr is not None:
                err = await self._proc.stderr.read()
            raise SandboxError(
                f"sandbox {self.id} failed to start: {err.decode(errors='replace').strip()}"
            ) from None
        if not hello.get("ready"):
            raise SandboxError(f"sandbox {self.id}: unexpected hello {hello!r}")

    def base_env(self) -> dict[str, str]:
        """Environment every command gets before `spec.extra_env` and its own `env`."""
        path = os.environ.get("PATH", SYSTEM_PATH) if self.spec.backend == "local" else SYSTEM_PATH
        return {"PATH": path, "HOME": self.home, "TMPDIR": self.tmp, "LANG": "C.UTF-8", "TERM": "dumb"}

    def rlimits(self, overrides: Mapping[str, int | None] | None = None) -> dict[str, int]:
        """setrlimit values for a command: the spec's, then `overrides` (None = no limit)."""
        limits = {"RLIMIT_CORE": 0}
        if self.spec.memory_mb is not None:
            limits["RLIMIT_DATA"] = self.spec.memory_mb * 1024 * 1024
        if self.spec.cpu_s is not None:
            limits["RLIMIT_CPU"] = self.spec.cpu_s
        if self.spec.max_file_mb is not None:
            limits["RLIMIT_FSIZE"] = self.spec.max_file_mb * 1024 * 1024
        for name, value in (overrides or {}).items():
            if value is None:
                limits.pop(name, None)
            else:
                limits[name] = value
        return limits

    async def exec(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout_s: float | None = None,
        grace_s: float = 2.0,
        rlimits: Mapping[str, int | None] | None = None,
    ) -> ExecResult:
        """Run one command inside, in its own process group; on timeout TERM the group, KILL after grace.

        `rlimits` overrides the spec's limits for this command (`{"RLIMIT_DATA": None}` lifts one).
        Raises SandboxError if the sandbox is gone or its agent stops answering (the sandbox is then
        destroyed). A command that fails is not an error: see ExecResult.returncode / .error.
        """
        async with self._lock:
            proc = self._proc
            if self._destroyed or proc is None or proc.stdin is None or proc.stdout is None:
                raise SandboxError(f"sandbox {self.id} is not running")
            req_id = next(_ids)
            full_env = {**self.base_env(), **self.spec.extra_env, **(env or {})}
            req: dict[str, Any] = {
                "op": "exec",
                "id": req_id,
                "argv": list(argv),
                "env": full_env,
                "cwd": cwd or self.workspace,
                "timeout_s": timeout_s,
                "grace_s": grace_s,
                "rlimits": self.rlimits(rlimits),
            }
            started = time.monotonic()
            backstop = None if timeout_s is None else timeout_s + grace_s + 10.0
            try:
                write_frame(proc.stdin, req)
                await proc.stdin.drain()
                reply = await asyncio.wait_for(read_frame(proc.stdout), backstop)
            except (TimeoutError, OSError, asyncio.IncompleteReadError) as e:
                await self.destroy()
                raise SandboxError(f"sandbox {self.id}: agent lost during exec: {type(e).__name__}") from e
            duration = time.monotonic() - started
            out_file, err_file = self.root / "io" / f"{req_id}.out", self.root / "io" / f"{req_id}.err"
            stdout, stderr = read_output(out_file), read_output(err_file)
            out_file.unlink(missing_ok=True)
            err_file.unlink(missing_ok=True)
            return ExecResult(reply["rc"], stdout, stderr, reply["timed_out"], duration, reply["error"])

    async def destroy(self, keep_workspace: Path | None = None) -> None:
        """Kill everything inside, stop the forwarder, remove the folder. Idempotent.

        `keep_workspace`: first move a sandbox-owned workspace to this new path, once every process
        inside is dead (nothing can still write to it): how a pooled rollout keeps its final workspace
        for scoring. A workspace the caller bound (`spec.workspace`) is never moved nor removed.
        """
        if self._destroyed:
            return
        self._destroyed = True
        proc = self._proc
        try:
            if proc is not None and self.spec.backend == "local" and proc.returncode is None:
                # No pid namespace: ask the agent to kill its command's group (it does on stdin EOF).
                if proc.stdin is not None:
                    proc.stdin.close()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 2.0)
            if proc is not None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
                if proc.stdin is not None:  # lets the transport close now, not in a GC after the loop
                    proc.stdin.close()
            if keep_workspace is not None and self.spec.workspace is None:
                shutil.move(self.host_workspace, keep_workspace)
        finally:
            self._finalizer()
            if self.forwarder is not None:
                await self.forwarder.close()

    @property
    def alive(self) -> bool:
        return not self._destroyed and self._proc is not None and self._proc.returncode is None

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.destroy()
