"""Per-sandbox control groups: a process cap, a memory cap and a CPU quota for the sandbox as a whole.

cgroup v2 is used where this process may create child groups with the `pids` and `memory`
controllers enabled (a delegated subtree: systemd `Delegate=yes`, or a container that gives us one);
cgroup v1 where the `pids` and `memory` hierarchies are mounted and writable (root on most v1
hosts). Where neither is possible nothing is created and `enforced()` says so: the sandbox then
relies on RLIMIT_NPROC (per sandbox, since every sandbox has its own uid when harnessrl runs as
root) and RLIMIT_DATA (per process) alone. The CPU quota (`SandboxSpec.cpus`, a task's `cpus`) needs the `cpu`
controller as well (delegated on v2, a writable hierarchy on v1); without it there is none.

The sandbox's agent process is moved in right after it starts, before it forks anything, so every
command and its children are counted.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from harnessrl.types import SandboxError

ROOT = Path("/sys/fs/cgroup")
OWN = Path("/proc/self/cgroup")


def _own_path(controller: str, own: Path = OWN) -> str:
    """This process's cgroup path in `controller`'s v1 hierarchy ("" = the v2 unified one), as the
    file `own` (/proc/self/cgroup) lists it."""
    for line in own.read_text().splitlines():
        _, names, path = line.split(":", 2)
        if (controller == "" and names == "") or controller in names.split(","):
            return path.lstrip("/")
    return ""


def _writable(folder: Path) -> bool:
    return folder.is_dir() and os.access(folder, os.W_OK)


def v2_group(root: Path = ROOT, own: Path = OWN) -> Path:
    """This process's group in the v2 hierarchy mounted at `root` (`own`: its /proc/<pid>/cgroup)."""
    return root / _own_path("", own)


def probe(root: Path = ROOT, own: Path = OWN) -> tuple[str, tuple[Path, ...], str]:
    """`layout()` read from the hierarchy mounted at `root` for the process whose `/proc/<pid>/cgroup`
    is `own`, uncached, with why it is "none" ("" otherwise)."""
    if (root / "cgroup.controllers").is_file():
        parent = v2_group(root, own)
        with contextlib.suppress(OSError):
            enabled = (parent / "cgroup.subtree_control").read_text().split()
            if {"pids", "memory"} <= set(enabled) and _writable(parent):
                return "v2", (parent,), ""
        return "none", (), f"cgroup v2 without pids and memory delegated to this process's group {parent}"
    pids, memory = root / "pids", root / "memory"
    if _writable(pids) and _writable(memory):
        groups = (pids / _own_path("pids", own), memory / _own_path("memory", own))
        return "v1", tuple(g / "harnessrl" for g in groups), ""
    return "none", (), f"no cgroup v2, and no writable v1 pids and memory hierarchies under {root}"


@cache
def layout() -> tuple[str, tuple[Path, ...]]:
    """("v2", (parent,)) or ("v1", (pids parent, memory parent)) or ("none", ()): where sandbox groups
    go. Checked once per process."""
    kind, parents, _ = probe()
    return kind, parents


@cache
def cpu_parent() -> Path | None:
    """Where sandbox groups get a CPU quota: the v2 parent when it delegates `cpu`, this process's
    group of the v1 `cpu` hierarchy when it is writable; None elsewhere. Checked once per process."""
    kind, parents = layout()
    if kind == "v2":
        with contextlib.suppress(OSError):
            if "cpu" in (parents[0] / "cgroup.subtree_control").read_text().split():
                return parents[0]
        return None
    if kind == "v1" and _writable(ROOT / "cpu"):
        return ROOT / "cpu" / _own_path("cpu") / "harnessrl"
    return None


def enforced() -> dict[str, str]:
    """What caps a sandbox as a whole on this machine (for docs, logs and the README's table)."""
    from harnessrl.sandbox.identity import drops_privileges

    kind, _ = layout()
    if kind == "none":
        processes = "RLIMIT_NPROC (per sandbox uid)" if drops_privileges() else "none (ordinary user)"
        return {"processes": processes, "memory": "RLIMIT_DATA per process only", "cpus": "none"}
    cpus = f"cgroup {kind} CPU quota" if cpu_parent() is not None else "none (no cpu controller)"
    return {
        "processes": f"cgroup {kind} pids.max",
        "memory": f"cgroup {kind} memory limit (no swap)",
        "cpus": cpus,
    }


@dataclass
class SandboxCgroup:
    """The group(s) of one sandbox; `attach` a pid, `kill` everything in it, `remove` when empty."""

    folders: tuple[Path, ...]
    kind: str
    attached: list[int] = field(default_factory=list)
    cpu: Path | None = None
    """The group holding the CPU quota (one of `folders`), None without one."""

    @classmethod
    def create(
        cls, name: str, max_processes: int | None, memory_mb: int | None, cpus: float | None = None
    ) -> SandboxCgroup | None:
        """Make the group(s) with their limits; None where this machine gives us no cgroups. The
        CPU quota is left out where there is no `cpu` controller (`cpu_parent`)."""
        kind, parents = layout()
        if kind == "none" or (max_processes is None and memory_mb is None and cpus is None):
            return None
        folders = tuple(p / name for p in parents)
        cpu = None if cpus is None or cpu_parent() is None else folders[0]
        if kind == "v1" and cpu is not None:
            cpu = (cpu_parent() or ROOT) / name
            folders += (cpu,)
        for folder in folders:
            folder.mkdir(parents=True, exist_ok=True)
        group = cls(folders, kind, cpu=cpu)
        try:
            group._limit(max_processes, memory_mb, cpus)
        except OSError:
            group.remove()
            raise
        return group

    def _limit(self, max_processes: int | None, memory_mb: int | None, cpus: float | None) -> None:
        if self.cpu is not None and cpus is not None:
            quota, period = max(1000, int(cpus * 100_000)), 100_000
            if self.kind == "v2":
                (self.cpu / "cpu.max").write_text(f"{quota} {period}")
            else:
                (self.cpu / "cpu.cfs_period_us").write_text(str(period))
                (self.cpu / "cpu.cfs_quota_us").write_text(str(quota))
        pids, memory = (self.folders[0], self.folders[0]) if self.kind == "v2" else self.folders[:2]
        if max_processes is not None:
            (pids / "pids.max").write_text(str(max_processes))
        if memory_mb is not None:
            limit = str(memory_mb * 1024 * 1024)
            if self.kind == "v2":
                (memory / "memory.max").write_text(limit)
                with contextlib.suppress(OSError):
                    (memory / "memory.swap.max").write_text("0")
            else:
                (memory / "memory.limit_in_bytes").write_text(limit)
                with contextlib.suppress(OSError):  # only with swap accounting on
                    (memory / "memory.memsw.limit_in_bytes").write_text(limit)

    def attach(self, pid: int) -> None:
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(str(pid))
        self.attached.append(pid)

    def pids(self) -> set[int]:
        found: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError):
                found |= {int(x) for x in (folder / "cgroup.procs").read_text().split()}
        return found

    def kill(self) -> None:
        """SIGKILL every process in the group (v2: one write to cgroup.kill)."""
        if self.kind == "v2":
            with contextlib.suppress(OSError):
                (self.folders[0] / "cgroup.kill").write_text("1")
                return
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def stop(self, wait_s: float = 5.0) -> bool:
        """Kill everything in the group until it is empty (a process forked while a v1 kill went
        through the list is killed on the next pass); False if some were left after `wait_s`."""
        deadline = time.monotonic() + wait_s
        while self.pids():
            if time.monotonic() > deadline:
                return False
            self.kill()
            time.sleep(0.002)
        return True

    def remove(self, wait_s: float = 1.0) -> bool:
        """rmdir the group(s), waiting up to `wait_s` for killed processes to leave; False if some
        group is still busy (it is left for the kernel to empty; the next sweep removes it)."""
        deadline = time.monotonic() + wait_s
        for folder in self.folders:
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or time.monotonic() > deadline:
                        return False
                    time.sleep(0.005)
        return True


def attach_agent(cgroup: SandboxCgroup, bwrap_pid: int, timeout_s: float = 30.0) -> None:
    """Put the agent in the sandbox's cgroup as soon as bwrap has forked it (polls bwrap's children).
    Returns quietly when bwrap is gone (the handshake reports why)."""
    deadline = time.monotonic() + timeout_s
    children = Path(f"/proc/{bwrap_pid}/task/{bwrap_pid}/children")
    while True:
        try:
            found = children.read_text().split()
        except OSError:
            return
        if found:
            break
        if time.monotonic() > deadline:
            raise SandboxError(f"bwrap {bwrap_pid} started no agent in {timeout_s:.0f} s")
        time.sleep(0.0005)
    if len(found) != 1:
        raise SandboxError(f"bwrap {bwrap_pid} has {len(found)} children, expected the agent alone")
    cgroup.attach(int(found[0]))
