"""Checker driver: runs inside the checker's own process, never imported by harnessrl.

    python3 -I -B driver.py ENTRY WORKSPACE TRANSCRIPT_JSON RESULT_FD [confine]

- ENTRY defines `grade(transcript, workspace_path)`: it is imported (not as `__main__`) and `grade`
  is called; the returned value is reported as {"mode": "grade", "value": ...}.
- ENTRY defines `main()` but has no `if __name__ == "__main__"` guard: it is imported and `main()`
  is called with argv[1] = WORKSPACE; what it prints is reported as {"mode": "main", "stdout": ...}.
- Otherwise ENTRY is run as `__main__` with argv[1] = WORKSPACE, exactly as `reward.sh` would, and
  what it prints is reported the same way ("script").
- ENTRY ending in `.sh` (a task's own `reward.sh`, `Checker.shell_entry`) is run with `bash ENTRY`
  in this process's cwd, stdin closed, its stdout captured through a socket; reported as
  {"mode": "shell", "stdout": ...} (and `exit_status` when bash exits non-zero: upstream's
  `set -euo pipefail` scripts fail that way).

The report goes, once, to RESULT_FD: a sealable memory file the host opened before this process
started. The driver first makes it non-inheritable, closes it in every Python-level fork
(`os.register_at_fork`: a `multiprocessing` worker running the agent's code forked a grandchild that
waited for the report and overwrote it) and makes itself non-dumpable, so programs a checker starts
can neither inherit it, keep it across a fork, nor reopen it through /proc/<pid>/fd. It then writes
the report at offset 0, seals the file (no write, grow or shrink, no further seals) and reads it back:
a channel that held more or other bytes, could not be written or sealed (a process that kept the
descriptor sealed it first, or mapped it) is a tampered channel, and the driver exits with
`TAMPERED` instead of 0. The host takes a report only from a sealed channel of a driver that exited
0, so what it reads is exactly what this process computed; killing the driver only makes the run
fail. For the same reason stdout is captured in this process (`sys.stdout`): a child that writes to
the inherited fd 1 is not taken as the checker's answer. Any exception is reported as
{"mode": ..., "error": traceback}; a SystemExit with a non-zero code as {"exit_status": code}, and
the driver then exits with that code. Stdlib only: the checker's python may be any python3.

A shell entry's stdout is a stream socket (a socket cannot be reopened through /proc/<pid>/fd, as a
pipe can: a daemon reopened bash's stdout and wrote the answer after bash exited), read while bash
runs; when bash exits, a program it started that is still running is an anomaly (the run fails and
everything but this process is killed: every process of the sandbox when sandboxed, bash's process
group otherwise), and only what arrived before bash exited counts.

With `confine` (the sandboxed runner), programs a Python checker starts (the agent's code, its tests)
cannot read, list or run anything in the driver's folder (the checker's files, with its expected
answers), and may change files only in the workspace, /tmp and /dev, through Landlock, on kernels
that have it: agent code that the checker ran read `check.py` and printed the answers the checker
wanted (task_0040: 0.33 -> 1.0), and could rename a folder of the sandbox's writable root or HOME
to plant a module the checker imported later. The checker itself keeps its access; each child
restricts itself right after fork (`subprocess` gets a `preexec_fn`, `os.fork` an at-fork hook,
`os.system` goes through `subprocess`). The report says whether it held (`children_confined`). A
shell entry's files are in the workspace anyway (upstream copies them there), so its children are
not confined; for it, `confine` says the driver runs in the sandbox's pid namespace (`_end_entry`).
"""

import ast
import ctypes
import errno
import fcntl
import importlib.util
import io
import json
import os
import runpy
import signal
import socket
import stat
import struct
import subprocess
import sys
import threading
import traceback
from typing import Any

MAX_STDOUT = 1 << 20
TAMPERED = 86
"""Exit status of a driver whose report channel was written, sealed or mapped by another process."""
# fcntl's memfd sealing (the same numbers on every architecture; named in `fcntl` since 3.8)
F_ADD_SEALS, F_GET_SEALS = 1033, 1034
SEALS = 1 | 2 | 4 | 8  # F_SEAL_SEAL, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_WRITE
# Landlock (the same numbers on every architecture): create_ruleset, add_rule, restrict_self
LANDLOCK_CREATE, LANDLOCK_ADD, LANDLOCK_RESTRICT = 444, 445, 446
LL_EXECUTE, LL_WRITE_FILE, LL_READ_FILE, LL_READ_DIR = 1, 2, 4, 8
LL_ABI1_ALL = (1 << 13) - 1  # also remove / make dir, file, link, socket, fifo, device
LL_REFER, LL_TRUNCATE = 1 << 13, 1 << 14  # Landlock ABI 2, 3
LL_READ = LL_EXECUTE | LL_READ_FILE | LL_READ_DIR
LL_PATH_BENEATH = 1
_ruleset = -1
_restricted = False


def _non_dumpable() -> None:
    try:
        ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass


def _build_ruleset(hidden: str, writable: list[str]) -> int:
    """A Landlock ruleset for the checker's children: reading, listing and running files everywhere
    but under `hidden` (a rule on every sibling of every folder on the way from / to it), and
    changing files only under `writable` (the workspace, /tmp, /dev): elsewhere they could rename a
    folder the checker reads later and plant their own module in its place (the sandbox's root and
    HOME are writable folders of its uid). -1 without Landlock."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    abi = libc.syscall(LANDLOCK_CREATE, None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # _VERSION
    if abi < 1:
        return -1
    every = LL_ABI1_ALL | (LL_REFER if abi >= 2 else 0) | (LL_TRUNCATE if abi >= 3 else 0)
    handled = ctypes.c_uint64(every)
    fd = libc.syscall(LANDLOCK_CREATE, ctypes.byref(handled), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if fd < 0:
        return -1

    def allow(path: str, rights: int) -> None:
        try:
            pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not stat.S_ISDIR(os.fstat(pfd).st_mode):  # a file's rule takes file rights only
                rights &= LL_EXECUTE | LL_WRITE_FILE | LL_READ_FILE | LL_TRUNCATE
            rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, pfd))
            if libc.syscall(LANDLOCK_ADD, fd, LL_PATH_BENEATH, rule, ctypes.c_uint32(0)) < 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}")
        finally:
            os.close(pfd)

    parts = [p for p in os.path.realpath(hidden).split("/") if p]
    for depth, keep_out in enumerate(parts):
        parent = "/" + "/".join(parts[:depth])
        for name in os.listdir(parent):
            if name != keep_out:
                allow(os.path.join(parent, name), LL_READ)
    for path in writable:
        allow(path, every)
    return int(fd)


def _restrict_self() -> None:
    """In a child, before it runs anything: enter the ruleset once (fails closed)."""
    global _restricted
    if _restricted:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS (bwrap set it already)
    if libc.syscall(LANDLOCK_RESTRICT, _ruleset, ctypes.c_uint32(0)) != 0:
        raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    _restricted = True


def _after_fork_in_child() -> None:
    try:
        _restrict_self()
    except BaseException:
        os._exit(126)


_Popen = subprocess.Popen


class _ConfinedPopen(_Popen):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        given = kwargs.get("preexec_fn")

        def preexec() -> None:
            _restrict_self()
            if given is not None:
                given()

        kwargs["preexec_fn"] = preexec
        super().__init__(*args, **kwargs)


def _system(command: Any) -> int:
    """`os.system` through subprocess (the C library's system() would skip the confinement); returns
    the wait status, as os.system does."""
    rc = subprocess.call(command, shell=True)
    return rc << 8 if rc >= 0 else -rc


def _no_spawn(*_: Any, **__: Any) -> int:
    raise OSError(errno.ENOSYS, "posix_spawn is not available to checkers (its children must be confined)")


def _confine_children(hidden: str, workspace: str) -> bool:
    """From now on, every program this process starts cannot read `hidden` and can change files only
    in `workspace`, /tmp and /dev. False where Landlock is missing (old kernel, disabled): children
    then see and may change what the checker may."""
    global _ruleset
    try:
        _ruleset = _build_ruleset(hidden, [workspace, "/tmp", "/dev"])
    except OSError:
        _ruleset = -1
    if _ruleset < 0:
        return False
    subprocess.Popen = _ConfinedPopen  # type: ignore[misc]
    setattr(subprocess, "_USE_POSIX_SPAWN", False)  # noqa: B010 (a Final of the stdlib's)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    os.system = _system
    os.posix_spawn = os.posix_spawnp = _no_spawn
    return True


def _shape(source: str) -> tuple[bool, bool, bool]:
    tree = ast.parse(source)
    names = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    guarded = "__main__" in source and "__name__" in source
    return "grade" in names, "main" in names, guarded


def _import(entry: str) -> Any:
    spec = importlib.util.spec_from_file_location("harnessrl_checker", entry)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {entry}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["harnessrl_checker"] = module
    spec.loader.exec_module(module)
    return module


class _Capture(io.StringIO):
    def write(self, s: str) -> int:
        if self.tell() < MAX_STDOUT:
            super().write(s[: MAX_STDOUT - self.tell()])
        return len(s)


def _survivors(own: int) -> list[int]:
    """Processes of this pid namespace other than pid 1 (the sandbox agent) and `own`, not zombies."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in (1, own):
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def _in_sandbox() -> bool:
    """True in the checker sandbox's pid namespace: this process's parent is its pid 1, the agent."""
    try:
        with open("/proc/1/cmdline", "rb") as fh:
            return os.getppid() == 1 and b"/opt/harnessrl/agent" in fh.read()
    except OSError:
        return False


def _end_entry(pgid: int, sandboxed: bool) -> int:
    """Kill whatever the entry left running -> how many processes were still running. Sandboxed (a
    pid namespace of its own), every process but pid 1 and this one (`kill(-1)`: atomic against
    forks); otherwise bash's process group (a `setsid` child escapes: no isolation anyway)."""
    if sandboxed and _in_sandbox():
        left = len(_survivors(os.getpid()))
        for _ in range(3):
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                break
        return left
    try:
        os.killpg(pgid, 0)
    except OSError:
        return 0
    os.killpg(pgid, signal.SIGKILL)
    return 1


def _read_into(sock: socket.socket, tail: bytearray) -> None:
    """Keep the last MAX_STDOUT bytes that arrive on `sock` until its read side is shut or closed."""
    while True:
        try:
            chunk = sock.recv(1 << 16)
        except OSError:
            return
        if not chunk:
            return
        tail += chunk
        del tail[:-MAX_STDOUT]


def _shell(entry: str, sandboxed: bool) -> dict[str, Any]:
    host, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        proc = subprocess.Popen(
            ["bash", entry], stdin=subprocess.DEVNULL, stdout=child.fileno(), start_new_session=True
        )
    finally:
        child.close()
    tail = bytearray()
    reader = threading.Thread(target=_read_into, args=(host, tail), daemon=True)
    reader.start()
    with host:
        proc.wait()
        host.shutdown(socket.SHUT_RD)  # bash has exited: later writes get EPIPE, queued bytes stay
        reader.join()
    left = _end_entry(proc.pid, sandboxed)
    out = tail.decode("utf-8", errors="replace")
    if left:
        why = f"{left} program(s) the entry started were still running when it exited (killed)"
        return {"mode": "shell", "error": f"EntryError: {why}", "stdout": out}
    if proc.returncode != 0:
        return {"mode": "shell", "exit_status": proc.returncode if proc.returncode > 0 else 1, "stdout": out}
    return {"mode": "shell", "stdout": out}


def _run(entry: str, workspace: str, transcript: Any, captured: _Capture, sandboxed: bool) -> dict[str, Any]:
    mode = "script"
    if entry.endswith(".sh"):
        try:
            return _shell(entry, sandboxed)
        except BaseException:
            return {"mode": "shell", "error": traceback.format_exc()[-4000:]}
    try:
        with open(entry, encoding="utf-8") as fh:
            has_grade, has_main, guarded = _shape(fh.read())
        sys.argv = [entry, workspace]
        if has_grade:
            mode = "grade"
            return {"mode": mode, "value": _import(entry).grade(transcript, workspace)}
        if has_main and not guarded:
            mode = "main"
            _import(entry).main()
        else:
            runpy.run_path(entry, run_name="__main__")
    except SystemExit as e:
        if e.code not in (None, 0):
            code = e.code if isinstance(e.code, int) else 1
            return {"mode": mode, "exit_status": code, "stdout": captured.getvalue()}
    except BaseException:
        return {"mode": mode, "error": traceback.format_exc()[-4000:]}
    return {"mode": mode, "stdout": captured.getvalue()}


def _deliver(fd: int, data: bytes) -> bool:
    """Write the report at offset 0 of the channel, seal it, read it back: True when the sealed
    channel holds exactly `data` (no other process wrote, sealed or mapped it)."""
    try:
        if os.pwrite(fd, data, 0) != len(data):
            return False
        fcntl.fcntl(fd, F_ADD_SEALS, SEALS)  # EPERM: sealed already; EBUSY: someone mapped it writable
        sealed = fcntl.fcntl(fd, F_GET_SEALS) & SEALS == SEALS
        return sealed and os.fstat(fd).st_size == len(data) and os.pread(fd, len(data) + 1, 0) == data
    except OSError:
        return False


def _close_in_child(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


def main() -> None:
    entry, workspace, transcript_path, result_fd = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    os.set_inheritable(result_fd, False)
    os.register_at_fork(after_in_child=lambda: _close_in_child(result_fd))
    _non_dumpable()
    with open(transcript_path, encoding="utf-8") as fh:
        transcript = json.load(fh)
    sys.path.insert(0, os.path.dirname(os.path.abspath(entry)))
    sandboxed = sys.argv[5:] == ["confine"]
    confine = sandboxed and not entry.endswith(".sh")
    confined = confine and _confine_children(os.path.dirname(os.path.abspath(__file__)), workspace)
    real_stdout, captured = sys.stdout, _Capture()
    sys.stdout = captured
    try:
        report = _run(entry, workspace, transcript, captured, sandboxed)
    finally:
        sys.stdout = real_stdout
    report["children_confined"] = confined
    try:
        data = json.dumps(report, default=repr).encode()
    except (TypeError, ValueError, RecursionError) as e:  # a circular value, a 5,000-digit int
        data = json.dumps({"mode": report.get("mode"), "error": f"unreportable value: {e}"}).encode()
    if not _deliver(result_fd, data):
        sys.stderr.write("harnessrl driver: the report channel was tampered with\n")
        os._exit(TAMPERED)
    sys.stdout.write(captured.getvalue())  # for the logs only
    sys.stdout.flush()
    if "exit_status" in report:
        os._exit(report["exit_status"] & 0xFF or 1)


if __name__ == "__main__":
    main()
