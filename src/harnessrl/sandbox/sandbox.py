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
import itertools
import logging
import os
import shutil
import signal
import socket
import time
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

from harnessrl.sandbox import bwrap, identity, layout, overlay, seccomp
from harnessrl.sandbox.cgroups import SandboxCgroup, attach_agent
from harnessrl.sandbox.folders import (
    AGENT_FILE,
    agent_program,
    default_base_dir,
    ensure_base,
    new_root,
    sweep_once,
)
from harnessrl.sandbox.folders import teardown as _teardown
from harnessrl.sandbox.fscopy import TreeReport
from harnessrl.sandbox.identity import UidLease
from harnessrl.sandbox.outputs import read_outputs
from harnessrl.sandbox.portforward import UnixToTcpForwarder
from harnessrl.sandbox.programs import PROGRAMS_DIR, SYSTEM_PATH, inside_path
from harnessrl.sandbox.protocol import ProtocolError, check_exec_reply, encode_request, read_reply
from harnessrl.sandbox.spec import ExecResult, SandboxSpec, command_rlimits
from harnessrl.types import SandboxError, SandboxLost

log = logging.getLogger(__name__)
SETPRIV = shutil.which("setpriv") or "/usr/bin/setpriv"
"""util-linux `setpriv` starts bwrap as the sandbox's uid (~1 ms; Popen(user=) forks, no vfork)."""
_ids = itertools.count()


class Sandbox:
    """A running sandbox. Build with `await Sandbox.create(spec)`; single use; destroy when done."""

    def __init__(self, spec: SandboxSpec) -> None:
        self.spec = spec
        base = spec.base_dir or default_base_dir()
        ensure_base(base)
        self.root = new_root(base)
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
        self.isolated = not local
        self.lease = UidLease(os.getuid(), None)
        """The host uid everything in the sandbox runs as (never 0 for bwrap when we are root)."""
        self.agent_file = AGENT_FILE
        """The agent program it starts (`_agent_file`: set while its folders are made)."""
        self.tmpfs = False
        """True when the sandbox folder is its own size-limited tmpfs."""
        self.cgroup: SandboxCgroup | None = None
        self.forwarder: UnixToTcpForwarder | None = None
        self._proc: asyncio.subprocess.Process | None = None
        self._fd_sock: socket.socket | None = None
        self.rw_sources: dict[Path, Path] = {}
        self.ro_sources: dict[Path, Path] = {}
        """What each source of `spec.ro_mounts` is bound from (its staging bind, held by this sandbox)."""
        self._held: list[tuple[Path, Path]] = []
        """The staging binds this sandbox holds (`identity.staged(held=True)`), released at teardown."""
        self._out_fds: dict[str, int] = {}
        self._lock = asyncio.Lock()
        self._destroyed = False
        self._finalizer = weakref.finalize(
            self, _teardown, None, self.root, False, None, self.lease, self._held
        )

    @property
    def uid(self) -> int:
        return self.lease.uid

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
            if isinstance(e, (OSError, TimeoutError, asyncio.IncompleteReadError, ProtocolError)):
                raise SandboxError(f"sandbox {sb.id} failed to start: {type(e).__name__}: {e}") from e
            raise
        return sb

    def _prepare_folders(self) -> Path | None:
        """Lease the uid, mount the tmpfs, make the folders; returns the workspace folder to bind
        (None: the image root's own folder is the workspace)."""
        base = self.root.parent
        if self.isolated and identity.drops_privileges() and not identity.reachable_by_others(base):
            raise SandboxError(
                f"sandbox base folder {base} cannot be entered by sandbox uids (it or a parent lacks o+x); "
                "chmod it 0711 or pick another (SandboxSpec.base_dir / $HARNESSRL_SANDBOX_DIR)"
            )
        sweep_once(base)
        self.agent_file = agent_program(self.spec.agent, self.spec.image_root is not None)
        if self.isolated:
            self.lease = identity.lease_uid()
            if identity.drops_privileges() and self.spec.disk_mb is not None:
                self.tmpfs = identity.mount_tmpfs(self.root, self.spec.disk_mb, self.spec.max_files)
            if identity.drops_privileges():  # only the sandbox's uid passes (its bwrap, by its gid)
                os.chown(self.root, os.geteuid(), self.lease.uid)
                self.root.chmod(0o710)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(
            self, _teardown, None, self.root, self.tmpfs, None, self.lease, self._held
        )
        uid = self.lease.uid
        image = self.spec.image_root is not None
        self._out_fds = layout.make_folders(self.root, self.spec, uid, self.host_workspace)
        self.rw_sources = {
            p: layout.reachable_in(self.root, self.tmpfs, p, f"rw-{i}")
            for i, p in enumerate(self.spec.rw_binds)
        }
        if self.isolated:
            self._held += layout.hold_ro_mounts(self.spec, self.root, self.tmpfs, self.ro_sources)
        if image:
            merged = overlay.prepare_root(self.root, self.spec, uid, self.isolated and self.tmpfs, self.id)
            if self.spec.workspace is None:
                self.host_workspace = merged / self.spec.mount_dir.strip("/")
                return None
        if not self.isolated or self.spec.workspace is None:
            return self.host_workspace
        self.host_workspace.mkdir(parents=True, exist_ok=True)
        if identity.drops_privileges():
            identity.chown_tree(self.host_workspace, uid)
        return layout.reachable_in(self.root, self.tmpfs, self.host_workspace, "ws")

    async def _start_forwarder(self) -> None:
        """The model endpoint as a unix socket in the sandbox's private `sock/` folder (isolated only)."""
        if self.spec.endpoint is not None and self.isolated:
            host, port = self.spec.endpoint
            sock_path = self.root / "sock" / "model.sock"
            self.forwarder = UnixToTcpForwarder(sock_path, host, port, self.spec.max_connections)
            await self.forwarder.start()
            sock_path.chmod(0o666)  # the folder is private to this sandbox; its uid must connect

    def _agent_argv(
        self, workspace: Path | None, agent: Path, fd_socket: int, seccomp_fd: int | None
    ) -> list[str]:
        """The command that starts the agent: bubblewrap (as the leased uid, in its cgroup when the spec
        limits processes, memory or CPU), or the agent itself on the LOCAL backend."""
        if not self.isolated:
            why = "LOCAL backend, NO ISOLATION: the agent can read and write the host"
            log.warning("sandbox %s: %s", self.id, why)
            return bwrap.agent_command(agent, str(agent), ["0", "", "0", str(fd_socket)])
        rw = self.rw_sources
        argv = bwrap.build_argv(
            self.spec,
            self.root,
            workspace,
            agent,
            fd_socket=fd_socket,
            seccomp_fd=seccomp_fd,
            rw_sources=rw,
            ro_sources=self.ro_sources,
        )
        if identity.drops_privileges():
            uid = str(self.lease.uid)
            argv = [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--", *argv]
        limits = (self.spec.max_processes, self.spec.memory_mb, self.spec.cpus)
        self.cgroup = SandboxCgroup.create(self.id, *limits)  # None without limits or cgroups
        return argv

    async def _start(self) -> None:
        workspace = await asyncio.to_thread(self._prepare_folders)
        await self._start_forwarder()
        agent = self.agent_file
        host_end, agent_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._fd_sock = host_end
        pass_fds = [agent_end.fileno()]
        seccomp_fd = seccomp.program_fd() if self.isolated else None
        if seccomp_fd is not None:
            pass_fds.append(seccomp_fd)
        try:
            argv = self._agent_argv(workspace, agent, agent_end.fileno(), seccomp_fd)
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                pass_fds=pass_fds,
                env={"PATH": SYSTEM_PATH, "LANG": "C.UTF-8"},
            )
        finally:
            agent_end.close()
            if seccomp_fd is not None:
                os.close(seccomp_fd)
        self._finalizer.detach()
        self._finalizer = weakref.finalize(
            self, _teardown, self._proc.pid, self.root, self.tmpfs, self.cgroup, self.lease, self._held
        )
        # Moving a process into a cgroup waits for an RCU grace period (~5 ms per v1 hierarchy): do it
        # while the agent's python starts. Safe: the agent forks nothing before its first request,
        # and no request is sent before create() returns, which waits for the move.
        attach = None
        if self.cgroup is not None:
            attach = asyncio.ensure_future(asyncio.to_thread(attach_agent, self.cgroup, self._proc.pid))
        try:
            await self._handshake()
        finally:
            if attach is not None:
                await attach

    async def _handshake(self) -> None:
        """Wait for the agent's hello and check it."""
        assert self._proc is not None and self._proc.stdout is not None
        try:
            hello = await read_reply(self._proc.stdout)
        except asyncio.IncompleteReadError:
            err = b""
            if self._proc.stderr is not None:
                err = await self._proc.stderr.read(8192)
            raise SandboxError(
                f"sandbox {self.id} failed to start: {err.decode(errors='replace').strip()}"
            ) from None
        if hello.get("ready") is not True:
            raise SandboxError(f"sandbox {self.id}: unexpected hello {hello!r:.200}")
        if self.isolated and hello.get("dumpable") is not False:
            raise SandboxError(f"sandbox {self.id}: the agent could not make itself non-dumpable")

    def system_path(self) -> str:
        """`PROGRAMS_DIR` in PATH: itself on the host root, std folders on an image, host PATH locally."""
        if self.spec.backend == "local":
            return os.environ.get("PATH", SYSTEM_PATH)
        return SYSTEM_PATH if self.spec.image_root is not None else PROGRAMS_DIR

    def base_env(self) -> dict[str, str]:
        """Environment every command gets before `spec.extra_env` and its own `env`."""
        path = self.system_path()
        return {"PATH": path, "HOME": self.home, "TMPDIR": self.tmp, "LANG": "C.UTF-8", "TERM": "dumb"}

    def command_env(self, env: Mapping[str, str] | None = None) -> dict[str, str]:
        """`base_env`, `spec.extra_env`, the command's own (PROGRAMS_DIR -> `system_path()`), path_prefix."""
        full_env = {**self.base_env(), **self.spec.extra_env, **(env or {})}
        if "PATH" in full_env:
            full_env["PATH"] = inside_path(full_env["PATH"], self.system_path())
        if self.spec.path_prefix:
            full_env["PATH"] = os.pathsep.join([*self.spec.path_prefix, full_env.get("PATH", "")])
        return full_env

    def rlimits(self, overrides: Mapping[str, int | None] | None = None) -> dict[str, int]:
        """setrlimit values for a command: the spec's, then `overrides` (None = no limit)."""
        own_uid = self.isolated and identity.drops_privileges()  # RLIMIT_NPROC: the uid is the sandbox's
        return command_rlimits(self.spec, own_uid, overrides or {})

    async def exec(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        timeout_s: float | None = None,
        grace_s: float = 2.0,
        rlimits: Mapping[str, int | None] | None = None,
        extra_fds: Sequence[int] = (),
    ) -> ExecResult:
        """Run one command inside, in its own process group; on timeout TERM the group, KILL after grace.

        `rlimits` overrides the spec's limits for this command (`{"RLIMIT_DATA": None}` lifts one).
        `extra_fds`: host descriptors the command gets as fds 3, 4, ... (a result channel).
        Raises SandboxError if the sandbox is gone or its agent stops answering or answers nonsense
        (the sandbox is then destroyed). A command that fails is not an error: see ExecResult.
        """
        async with self._lock:
            proc = self._proc
            if self._destroyed or proc is None or proc.returncode is not None or proc.stdout is None:
                raise SandboxError(f"sandbox {self.id} is not running")
            assert self._fd_sock is not None and proc.stdin is not None
            req_id = next(_ids)
            try:
                frame = encode_request(
                    req_id,
                    argv,
                    self.command_env(env),
                    cwd or self.workspace,
                    timeout_s,
                    grace_s,
                    self.rlimits(rlimits),
                    2 + len(extra_fds),
                )
            except ValueError as e:  # nothing could exec this: the command fails, as subprocess's would
                return ExecResult(127, "", "", False, 0.0, f"ValueError: {e}")
            fds = [os.memfd_create(f"hrl-{req_id}-{name}", os.MFD_CLOEXEC) for name in ("out", "err")]
            started = time.monotonic()
            backstop = None if timeout_s is None else timeout_s + grace_s + 10.0
            try:
                socket.send_fds(self._fd_sock, [b"f"], [*fds, *extra_fds])
                proc.stdin.write(frame)
                await proc.stdin.drain()
                rc, timed_out, error = check_exec_reply(
                    await asyncio.wait_for(read_reply(proc.stdout), backstop), req_id
                )
                if self._destroyed:  # the reply raced destroy(): the command was killed with the sandbox
                    raise SandboxLost(f"sandbox {self.id} was destroyed while the command ran")
                duration = time.monotonic() - started
                stdout, stderr = await read_outputs(fds[0], fds[1])
            except (TimeoutError, OSError, asyncio.IncompleteReadError, ProtocolError) as e:
                await self.destroy()
                why = f"{type(e).__name__}: {e}"
                raise SandboxLost(f"sandbox {self.id}: agent lost during exec: {why}") from e
            finally:
                for fd in fds:
                    os.close(fd)
            return ExecResult(rc, stdout, stderr, timed_out, duration, error)

    def hand_over(self, path: Path) -> None:
        """Give files the host wrote for the sandbox (harness configs in `host_home`) to its uid."""
        if self.isolated and identity.drops_privileges():
            identity.chown_tree(path, self.lease.uid)

    async def load_workspace(self, source: Path) -> None:
        """Copy trusted task files into a sandbox-owned workspace (a pooled sandbox) and hand them to
        the sandbox's uid."""

        def copy() -> None:
            shutil.copytree(source, self.host_workspace, symlinks=True, dirs_exist_ok=True)
            if identity.drops_privileges() and self.isolated:
                identity.chown_tree(self.host_workspace, self.lease.uid)

        await asyncio.to_thread(copy)

    async def destroy(
        self, keep_workspace: Path | None = None, *, keep_layer: Path | None = None
    ) -> TreeReport | None:
        """Kill everything inside, stop the forwarder, remove the folder. Idempotent.

        `keep_workspace`: first copy a sandbox-owned workspace to this new path, once every process
        inside is dead (nothing can still write to it), by `fscopy.copy_untrusted`'s rules and caps
        (`spec.max_files`, `spec.disk_mb`): how a pooled rollout keeps its final workspace for scoring.
        Returns that copy's report. A workspace the caller bound (`spec.workspace`) is never moved
        nor removed. File work runs in a thread: the event loop never walks the agent's files.
        `keep_layer` (an image sandbox, instead of `keep_workspace`): copy its writable layer, all it
        changed anywhere, to this new path by the same caps (`copy_untrusted(layer=True)`), for a
        fresh sandbox of the image over it (`SandboxSpec.layers`); returns that copy's report.
        """
        if keep_layer is not None and (keep_workspace is not None or self.spec.image_root is None):
            raise ValueError("keep_layer: an image sandbox's writable layer, without keep_workspace")
        if self._destroyed:
            return None
        self._destroyed = True
        proc = self._proc
        report: TreeReport | None = None
        try:
            if proc is not None and self.spec.backend == "local" and proc.returncode is None:
                # No pid namespace: ask the agent to kill its command's group (it does on stdin EOF).
                if proc.stdin is not None:
                    proc.stdin.close()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(proc.wait(), 2.0)
            await self.stop()
            if keep_layer is not None or (keep_workspace is not None and self.spec.workspace is None):
                report = await asyncio.to_thread(
                    overlay.keep, self.spec, self.root, self.host_workspace, keep_workspace, keep_layer
                )
        finally:
            if self._fd_sock is not None:
                self._fd_sock.close()
            for fd in self._out_fds.values():
                os.close(fd)
            self._out_fds = {}
            finalizer = self._finalizer
            finalizer.detach()
            args = (None, self.root, self.tmpfs, self.cgroup, self.lease, self._held)
            await asyncio.to_thread(_teardown, *args)
            if self.forwarder is not None:
                await self.forwarder.close()
        return report

    async def stop(self) -> None:
        """Kill every process inside and wait until they are gone (their cgroup empty, where there is
        one: `SandboxCgroup.stop`); the folders stay for the host to read (`out_dir`) until
        `destroy()`. Commands can no longer run."""
        proc = self._proc
        if self.cgroup is not None:
            self.cgroup.kill()
        if proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            if proc.stdin is not None:  # lets the transport close now, not in a GC after the loop
                proc.stdin.close()
        if self.cgroup is not None:
            await asyncio.to_thread(self.cgroup.stop)

    def out_dir(self, inside: str) -> int:
        """A descriptor of the out folder bound at `inside` (`SandboxSpec.out_dirs`), opened before
        anything ran inside; read what it holds only after `stop()` (openat, no link followed)."""
        return self._out_fds[inside]

    @property
    def alive(self) -> bool:
        return not self._destroyed and self._proc is not None and self._proc.returncode is None

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.destroy()
