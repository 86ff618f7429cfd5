"""The kernel and the sandbox: what every rollout needs (the sandbox package's own probes, asked of
the paths a `Machine` names), and what task images need (overlayfs, idmapped mounts)."""

from __future__ import annotations

import os
import shutil
from functools import partial
from pathlib import Path

from harnessrl.doctor.check import Check, Machine, Outcome, fail, ok, warn
from harnessrl.sandbox import cgroups, seccomp
from harnessrl.sandbox.bwrap import bwrap_path

GiB = 2**30
CAP_SYS_ADMIN = 21
USERNS = (
    ("userns-clone", "kernel.unprivileged_userns_clone", "0", "1"),
    ("userns-max", "user.max_user_namespaces", "0", "15000"),
    ("userns-apparmor", "kernel.apparmor_restrict_unprivileged_userns", "1", "0"),
)
"""(check, sysctl, the value that forbids unprivileged user namespaces, the value the fix sets):
Debian's switch, the per-user limit, Ubuntu's AppArmor restriction (23.10 on). bwrap is started as
the sandbox's own unprivileged uid, so it needs them even when harnessrl runs as root."""
IDMAP_KERNEL = (5, 19)
"""Idmapped mounts under overlayfs (`sandbox/overlay.py`): image roots need this kernel or later."""
SHM_MIN = 1 * GiB
"""Less free in /dev/shm warns: sandbox folders live there (and Ray's object store)."""
DISK_WARN, DISK_FAIL = 10 * GiB, 2 * GiB
"""Free space at the cache root: harnesses (~4 GiB), the converted model (0.5 GiB), images."""
AS_ROOT = "sudo .venv/bin/harnessrl doctor"
IN_CONTAINER = (
    "docker run --cap-add SYS_ADMIN --security-opt seccomp=unconfined "
    "--security-opt apparmor=unconfined IMAGE"
)
"""Where a container is what refuses: its capabilities and its seccomp and AppArmor profiles."""
ARCHES = {"x86_64": "amd64", "AMD64": "amd64", "aarch64": "arm64", "arm64": "arm64"}


def _kernel_fix(m: Machine) -> str:
    return f"sudo apt-get install -y linux-image-{ARCHES.get(m.machine, 'amd64')}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _effective_caps(m: Machine) -> int:
    for line in (_read(m.proc / "self" / "status") or "").splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return 0


def root(m: Machine) -> Outcome:
    if m.euid != 0:
        return warn(
            f"uid {m.euid}, not root: sandboxes run as this user (no uid, tmpfs quota or image root "
            "of their own; docs/SECURITY.md)"
        )
    if not _effective_caps(m) >> CAP_SYS_ADMIN & 1:
        why = "root without CAP_SYS_ADMIN (a default container): no tmpfs quota, staging binds or image roots"
        return warn(why, IN_CONTAINER)
    return ok("root with CAP_SYS_ADMIN: each sandbox gets a uid, a tmpfs and (tasks with images) a root")


def userns(m: Machine, sysctl: str, forbids: str) -> Outcome:
    value = _read(m.proc / "sys" / sysctl.replace(".", "/"))
    if value is None:
        return ok(f"{sysctl}: not on this kernel")
    if value.strip() == forbids:
        return fail(f"{sysctl} = {forbids}: unprivileged user namespaces are refused, and bwrap needs one")
    return ok(f"{sysctl} = {value.strip()}")


def bwrap(m: Machine) -> Outcome:
    found = bwrap_path(m.path)
    return ok(found) if found else fail("bubblewrap (bwrap) is not installed: every sandbox runs in it")


def setpriv(m: Machine) -> Outcome:
    if m.euid != 0:
        return ok("not needed: not root (sandboxes run as this user)")
    found = shutil.which("setpriv", path=m.path)
    return ok(found) if found else fail("setpriv is not installed: root starts each sandbox's uid with it")


def seccomp_filter(m: Machine) -> Outcome:
    if seccomp.filter_program(m.machine) is None:
        return warn(f"no filter for {m.machine}: sandboxes run without one (bwrap --disable-userns)", "")
    lacks = seccomp.kernel_lacks(m.proc)
    if lacks:
        return fail(f"the kernel's seccomp filters cannot return {', '.join(lacks)} (CONFIG_SECCOMP_FILTER)")
    denied = len(seccomp.DENY_EPERM_X86_64) + len(seccomp.DENY_ENOSYS_X86_64)
    return ok(f"x86-64 filter denying {denied} calls; the kernel returns {', '.join(seccomp.ACTIONS)}")


def cgroup_caps(m: Machine) -> Outcome:
    root, own = m.sys / "fs" / "cgroup", m.proc / "self" / "cgroup"
    kind, parents, why = cgroups.probe(root, own)
    if kind != "none":
        return ok(f"cgroup {kind}: a process and a memory cap per sandbox under {parents[0].parent}")
    detail = f"{why}: sandboxes are capped by RLIMIT_NPROC and per-process memory only"
    if (root / "cgroup.controllers").is_file():
        subtree = cgroups.v2_group(root, own) / "cgroup.subtree_control"
        return warn(detail, f"echo '+pids +memory' | sudo tee {subtree}")
    return warn(detail, AS_ROOT if m.euid != 0 else "")


def dev_shm(m: Machine) -> Outcome:
    shm = m.dev_shm
    if not shm.is_dir() or not os.access(shm, os.W_OK):
        why = f"{shm} is missing or not writable: sandbox folders go to the temporary folder (on disk)"
        return warn(why, f"sudo mount -t tmpfs -o size=4G tmpfs {shm}")
    free = shutil.disk_usage(shm).free
    if free < SHM_MIN:
        return warn(f"{shm}: {free / GiB:.2f} GiB free; sandbox folders (and Ray's objects) live there")
    return ok(f"{shm}: {free / GiB:.1f} GiB free for sandbox folders")


def disk(m: Machine) -> Outcome:
    where = m.cache
    while not where.exists() and where != where.parent:
        where = where.parent
    free = shutil.disk_usage(where).free
    detail = f"{free / GiB:.1f} GiB free at the cache {m.cache} (harnesses ~4 GiB, models, images)"
    if free < DISK_FAIL:
        return fail(detail)
    return warn(detail) if free < DISK_WARN else ok(detail)


def overlayfs(m: Machine) -> Outcome:
    names = [line.split()[-1] for line in (_read(m.proc / "filesystems") or "").splitlines() if line.strip()]
    if "overlay" in names:
        return ok("overlay is in /proc/filesystems")
    return warn("overlayfs is not available: tasks with images need it for their writable layer")


def idmapped_mounts(m: Machine) -> Outcome:
    release = (_read(m.proc / "sys" / "kernel" / "osrelease") or "0.0").strip()
    try:
        version = tuple(int(p) for p in release.split("-")[0].split(".")[:2])
    except ValueError:
        version = (0, 0)
    need = ".".join(map(str, IDMAP_KERNEL))
    if version < IDMAP_KERNEL:
        return warn(f"kernel {release}: idmapped mounts under overlayfs need {need} (tasks with images)")
    return ok(f"kernel {release} (>= {need}); image roots also need root with CAP_SYS_ADMIN")


def system_checks(m: Machine) -> list[Check]:
    """The kernel's and the sandbox's checks, in the order they print."""
    checks = [Check("root", partial(root, m), AS_ROOT)]
    for name, sysctl, forbids, allows in USERNS:
        checks.append(Check(name, partial(userns, m, sysctl, forbids), f"sudo sysctl -w {sysctl}={allows}"))
    return [
        *checks,
        Check("bwrap", partial(bwrap, m), "sudo apt-get install -y bubblewrap"),
        Check("setpriv", partial(setpriv, m), "sudo apt-get install -y util-linux"),
        Check("seccomp", partial(seccomp_filter, m), _kernel_fix(m)),
        Check("cgroups", partial(cgroup_caps, m), ""),
        Check("dev-shm", partial(dev_shm, m), f"sudo mount -o remount,size=4G {m.dev_shm}"),
        Check("disk", partial(disk, m), "export HARNESSRL_CACHE=/a/folder/with/10GiB/free"),
        Check("overlayfs", partial(overlayfs, m), "sudo modprobe overlay"),
        Check("idmapped-mounts", partial(idmapped_mounts, m), _kernel_fix(m)),
    ]
