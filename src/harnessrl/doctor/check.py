"""A check is a name, a probe and the one command that fixes what the probe finds; running a list of them.

    checks = all_checks(Machine())            # the real machine; tests point one field at a fake
    results = run_checks(checks, on_result=print_it)

A probe returns an `Outcome` (ok, warn or fail, and what it saw). `fail` means a default rollout
(the quickstart: the white-box harness, bundled tasks, the embedded engine, a bubblewrap sandbox)
cannot run here; `warn` that something optional is missing or weaker (an npm harness, task images,
cgroup caps, speed). Fast probes read files and PATH and run first, in order, so the first line
appears at once; slow ones run programs (each bounded by `Machine.timeout_s`) in a thread pool
started before the fast ones, and `quick=True` leaves them out.
"""

from __future__ import annotations

import itertools
import os
import platform
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from harnessrl.cache import cache_root, checkout_root
from harnessrl.harnesses.install import HOST_PYTHON
from harnessrl.sandbox.agent_env import default_agent_env

Status = Literal["ok", "warn", "fail"]
WORKERS = 8
"""Slow probes run at once (they mostly wait on a program)."""


@dataclass(frozen=True)
class Outcome:
    """What a probe found."""

    status: Status
    detail: str
    fix: str | None = None
    """The command for this cause when it is not the check's usual one (None: the check's `fix`)."""


def ok(detail: str) -> Outcome:
    return Outcome("ok", detail)


def warn(detail: str, fix: str | None = None) -> Outcome:
    return Outcome("warn", detail, fix)


def fail(detail: str, fix: str | None = None) -> Outcome:
    return Outcome("fail", detail, fix)


@dataclass(frozen=True)
class Check:
    """One thing a rollout needs, how to look for it, and how to get it."""

    name: str
    probe: Callable[[], Outcome]
    fix: str
    """The one command (Debian/Ubuntu) that fixes it when it is not ok ("": none exists)."""
    slow: bool = False
    """It runs a program: run concurrently with the others, left out by `quick`."""


@dataclass(frozen=True)
class Result:
    """A check's outcome, as `harnessrl doctor` prints it (and `--json` writes it)."""

    name: str
    status: Status
    detail: str
    fix: str
    """The command that fixes it ("" when it is ok or nothing does)."""
    seconds: float


@dataclass(frozen=True)
class Machine:
    """Where the probes look. Every field defaults to this machine; a test points one at a fake."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    dev_shm: Path = Path("/dev/shm")
    path: str | None = None
    """PATH searched for programs (None: $PATH)."""
    euid: int = field(default_factory=os.geteuid)
    machine: str = field(default_factory=platform.machine)
    cache: Path = field(default_factory=cache_root)
    agent_env: Path = field(default_factory=default_agent_env)
    checkout: Path | None = field(default_factory=checkout_root)
    """The source checkout (for `scripts/agent_env.txt`); None for an installed package."""
    system_python: Path = Path(HOST_PYTHON)
    """What PyPI harnesses and the agent environment are built on."""
    timeout_s: float = 30.0
    """Each program a slow probe runs is killed after this long (and the check fails)."""

    def env(self) -> dict[str, str]:
        """The environment programs run with: ours, with `path` as PATH when set."""
        return {**os.environ, **({"PATH": self.path} if self.path is not None else {})}


def run_program(
    m: Machine, argv: Sequence[str], env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `argv` with `m`'s environment (or `env`), no stdin, output captured, killed after
    `m.timeout_s` (subprocess.TimeoutExpired); OSError when it cannot start."""
    return subprocess.run(
        list(argv),
        env=dict(env) if env is not None else m.env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=m.timeout_s,
    )


def run_check(check: Check) -> Result:
    """Probe once; a probe that raises is a failed check that says what it raised."""
    started = time.monotonic()
    try:
        outcome = check.probe()
    except Exception as e:  # a broken probe must not hide the others
        outcome = fail(f"the probe raised {type(e).__name__}: {e}")
    fix = check.fix if outcome.fix is None else outcome.fix
    return Result(
        name=check.name,
        status=outcome.status,
        detail=outcome.detail,
        fix="" if outcome.status == "ok" else fix,
        seconds=round(time.monotonic() - started, 3),
    )


def run_checks(
    checks: Sequence[Check], *, quick: bool = False, on_result: Callable[[Result], None] | None = None
) -> list[Result]:
    """Fast checks in order, then slow ones (started first, concurrently) in order; `on_result` sees
    each result as soon as it and every one before it are known."""
    fast = [c for c in checks if not c.slow]
    slow = [] if quick else [c for c in checks if c.slow]
    results: list[Result] = []
    with ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="doctor") as pool:
        pending = [pool.submit(run_check, c) for c in slow]
        for result in itertools.chain((run_check(c) for c in fast), (p.result() for p in pending)):
            results.append(result)
            if on_result is not None:
                on_result(result)
    return results


def header(width: int) -> str:
    """The table's first line; `width` is the longest check name."""
    return f"{'check':<{width}}  status  detail"


def table_lines(result: Result, width: int) -> list[str]:
    """A result as table rows, whole (nothing cut): its line, and its fix below the detail."""
    lines = [f"{result.name:<{width}}  {result.status:<6}  {result.detail}"]
    if result.fix:
        lines.append(f"{'':<{width}}  {'':<6}  fix: {result.fix}")
    return lines


def summary(results: Sequence[Result], skipped: int, seconds: float) -> str:
    """The closing line: counts by status, time, and what `--quick` left out."""
    counts = {s: sum(r.status == s for r in results) for s in ("fail", "warn", "ok")}
    line = f"{counts['fail']} failed, {counts['warn']} warnings, {counts['ok']} ok in {seconds:.1f} s"
    return line + (f" ({skipped} checks that run programs skipped: --quick)" if skipped else "")
