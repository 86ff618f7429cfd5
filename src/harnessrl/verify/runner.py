"""How verifier processes are run: the `CommandRunner` seam and the local subprocess runner.

The checker and reference scripts only ever run through a `CommandRunner`, so a sandboxing backend
(bubblewrap, later) replaces `LocalRunner` without touching the verifier. A runner must start the
command in its own process group and, on timeout, kill the whole group (checkers spawn pytest and
other children); it never raises for a failing command: the outcome is data in `RunOutput`.

`LocalRunner` gives no isolation: the command sees the host filesystem and network, and a child that
calls `setsid` leaves the process group and outlives the kill (a PID-namespace sandbox closes that).
Output goes to temporary files (no pipe can fill up and stall the child) and at most
`max_output_bytes` of each stream are kept (the head of stdout, where a checker's JSON starts, and the
tail of stderr).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol


class RunOutput(NamedTuple):
    """What one command did: `(returncode, stdout, stderr, timed_out)`; returncode is -9 when killed."""

    returncode: int
    stdout: str
    stderr: str
    timed_out: bool


class CommandRunner(Protocol):
    """Runs one command to completion (or timeout) in its own process group."""

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> RunOutput: ...


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read(path: Path, limit: int, tail: bool) -> str:
    with path.open("rb") as fh:
        if tail:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - limit))
        return fh.read(limit).decode("utf-8", errors="replace")


class LocalRunner:
    """Plain subprocesses on this machine, no isolation. Stray children are killed when it returns."""

    def __init__(self, max_output_bytes: int = 4 * 1024 * 1024) -> None:
        self.max_output_bytes = max_output_bytes

    def run(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float) -> RunOutput:
        with tempfile.TemporaryDirectory(prefix="harnessrl-run-") as tmp:
            out_path, err_path = Path(tmp) / "stdout", Path(tmp) / "stderr"
            with out_path.open("wb") as out, err_path.open("wb") as err:
                proc = subprocess.Popen(
                    list(argv),
                    cwd=cwd,
                    env=dict(env),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,
                )
                timed_out = False
                try:
                    proc.wait(timeout=timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                finally:
                    _kill_group(proc.pid)
                    proc.wait()
            return RunOutput(
                returncode=proc.returncode,
                stdout=_read(out_path, self.max_output_bytes, tail=False),
                stderr=_read(err_path, self.max_output_bytes, tail=True),
                timed_out=timed_out,
            )
