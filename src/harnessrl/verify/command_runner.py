"""How verifier processes are run: the `CommandRunner` seam and the local subprocess runner.

The checker and reference scripts only ever run through a `CommandRunner`, so a sandboxing backend
(bubblewrap, later) replaces `LocalRunner` without touching the verifier. A runner must start the
command in its own process group and, on timeout, kill the whole group (checkers spawn pytest and
other children); it never raises for a failing command: the outcome is data in `RunOutput`.

Checkers go through `run_checker(job)`: the runner starts `_driver.py` on the entry and hands it a
result channel (a sealable memory file the runner opened before any checker code ran, `result_channel`;
the driver reports only through it and seals it), and returns the process outcome with what came
through the channel: its bytes only when the driver sealed it, None otherwise (`read_report`).
Where the checker sees its files, the workspace, its cwd and HOME is the runner's business: the
sandboxed runner gives the upstream ClawGym layout (`/`, `/root`, the task's mount dir, on a bounded
copy of the workspace), `LocalRunner` the host paths.

`LocalRunner` gives no isolation: the command sees the host filesystem and network, and a child that
calls `setsid` leaves the process group and outlives the kill (a PID-namespace sandbox closes that).
Output goes to memory files (no pipe can fill up and stall the child, nothing on disk to swap for a
FIFO) and at most `max_output_bytes` of each stream are kept (the head of stdout, where a checker's
JSON starts, and the tail of stderr).
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

DRIVER = Path(__file__).resolve().parent / "_driver.py"
MAX_RESULT_BYTES = 2 * 1024 * 1024
"""Most of the driver's result message read back (metrics, and a main() checker's captured stdout)."""
SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE
"""What the driver seals its report with (`_driver._deliver`)."""
TAMPERED = 86
"""The driver's exit status when its channel was written, sealed or mapped by another process
(`_driver.TAMPERED`)."""


class RunOutput(NamedTuple):
    """What one command did: `(returncode, stdout, stderr, timed_out)`; returncode is -9 when killed."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool


@dataclass(frozen=True)
class CheckerJob:
    """One checker run. `folder` holds `task/` (the reward files), `driver.py` and `transcript.json`;
    the checker may read it, never write it."""

    folder: Path
    entry: str
    """The entry's path relative to `folder / "task"`."""
    workspace: Path
    """The final workspace on the host."""
    mount_dir: str
    """Where the task expects its workspace (`/root/.openclaw/workspace` for ClawGym tasks)."""
    python: str
    timeout_s: float


class CommandRunner(Protocol):
    """Runs one command to completion (or timeout) in its own process group."""

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> RunOutput: ...

    def run_checker(self, job: CheckerJob) -> tuple[RunOutput, bytes | None]:
        """Run the driver on the job's entry; (process outcome, `read_report` of the result channel)."""
        ...


def driver_argv(
    python: str, folder: str, entry: str, workspace: str, result_fd: int, confine: bool = False
) -> list[str]:
    """`_driver.py`'s command line, in paths as the checker sees them. `confine`: programs the checker
    starts may not read `folder` (Landlock; for the sandbox's fixed layout, where no folder above it
    gains entries later: a rule covers only what exists when it is made); for a shell entry, that the
    driver may kill every other process of its pid namespace once bash exits."""
    task = f"{folder}/task/{entry}"
    return [
        python,
        "-I",
        "-B",
        f"{folder}/driver.py",
        task,
        workspace,
        f"{folder}/transcript.json",
        str(result_fd),
        *(["confine"] if confine else []),
    ]


def checker_env(home: str | Path, python: str) -> dict[str, str]:
    """A minimal environment; the checker's python comes first on PATH (checkers call `python3 -m pytest`)."""
    path = os.pathsep.join([str(Path(python).parent), "/usr/local/bin:/usr/bin:/bin"])
    return {"PATH": path, "HOME": str(home), "TMPDIR": "/tmp", "LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def read_fd(fd: int, limit: int, tail: bool = False) -> bytes:
    """At most `limit` bytes of an open memory file: its head, or its tail."""
    size = os.fstat(fd).st_size
    start = max(0, size - limit) if tail else 0
    return os.pread(fd, min(limit, size), start)


def result_channel() -> int:
    """A fresh channel for one checker run: a memory file that can be sealed, closed on exec."""
    return os.memfd_create("hrl-result", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)


def read_report(fd: int) -> bytes | None:
    """The driver's report from its channel, once the checker's processes are gone: the bytes when
    the channel carries every seal (`SEALS`), at most `MAX_RESULT_BYTES`; None when it does not (the
    driver never finished its report, and nothing in the channel counts)."""
    if fcntl.fcntl(fd, fcntl.F_GET_SEALS) & SEALS != SEALS:
        return None
    return read_fd(fd, MAX_RESULT_BYTES)


class LocalRunner:
    """Plain subprocesses on this machine, no isolation. Stray children are killed when it returns."""

    def __init__(self, max_output_bytes: int = 4 * 1024 * 1024) -> None:
        self.max_output_bytes = max_output_bytes

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> RunOutput:
        out, _ = self._run(argv, cwd, env, timeout_s, None)
        return out

    def run_checker(self, job: CheckerJob) -> tuple[RunOutput, bytes | None]:
        result_fd = result_channel()
        try:
            argv = driver_argv(job.python, str(job.folder), job.entry, str(job.workspace), result_fd)
            with tempfile.TemporaryDirectory(prefix="harnessrl-check-cwd-") as cwd:
                env = checker_env(cwd, job.python)
                return self._run(argv, Path(cwd), env, job.timeout_s, result_fd)
        finally:
            os.close(result_fd)

    def _run(
        self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float, result_fd: int | None
    ) -> tuple[RunOutput, bytes | None]:
        out_fd, err_fd = (os.memfd_create(n, os.MFD_CLOEXEC) for n in ("hrl-out", "hrl-err"))
        try:
            proc = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out_fd,
                stderr=err_fd,
                start_new_session=True,
                pass_fds=() if result_fd is None else (result_fd,),
            )
            timed_out = False
            try:
                proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(proc.pid)
                proc.wait()
            result = None if result_fd is None else read_report(result_fd)
            return RunOutput(
                returncode=proc.returncode,
                stdout=read_fd(out_fd, self.max_output_bytes).decode("utf-8", errors="replace"),
                stderr=read_fd(err_fd, self.max_output_bytes, tail=True).decode("utf-8", errors="replace"),
                timed_out=timed_out,
            ), result
        finally:
            os.close(out_fd)
            os.close(err_fd)
