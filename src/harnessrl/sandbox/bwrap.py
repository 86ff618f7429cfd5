"""bubblewrap command lines: a read-only system, private HOME and /tmp, the workspace, no network.

bwrap itself already runs as the sandbox's unprivileged host uid (see `identity.py`): it creates a
user namespace in which that uid is 0, drops every capability, forbids further user namespaces,
mounts a fresh /proc (bwrap covers /proc/sys, /proc/sysrq-trigger, /proc/irq and /proc/bus
read-only), loads the seccomp filter (`seccomp.py`) and starts the agent as pid 1. Host folders the
uid could not reach are bound from their staged bind mounts (`identity.staged`) at their own paths.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from harnessrl.sandbox.identity import staged
from harnessrl.sandbox.programs import link_args
from harnessrl.sandbox.spec import SandboxSpec

AGENT_DIR = "/opt/harnessrl"
"""Inside the sandbox: the agent script, its io folder and the endpoint socket folder live here."""
INSIDE_UID = 1000
"""The uid and gid everything in the sandbox runs as (mapped to the sandbox's leased host uid). Not 0:
the kernel gives a non-dumpable process's /proc entries to root of its user namespace, so with
commands at uid 0 they could list the agent's descriptors (`/proc/1/fd`) and write its
`oom_score_adj`; at 1000 root of that namespace is unmapped and those entries are real root's."""


def etc_files(home: str) -> dict[str, str]:
    """`/etc/passwd`, `/etc/group` and `/etc/hosts` of a sandbox: root and the one user everything
    runs as; localhost only."""
    u = INSIDE_UID
    return {
        "passwd": f"root:x:0:0:root:/root:/bin/sh\nagent:x:{u}:{u}:agent:{home}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": f"root:x:0:\nagent:x:{u}:\nnogroup:x:65534:\n",
        "hosts": "127.0.0.1 localhost\n::1 localhost\n",
    }


# Minimal /etc: users, the dynamic linker, alternatives symlinks, time zone, TLS roots (harmless; there
# is no network). resolv.conf is deliberately absent: there is nothing to resolve names with.
ETC_FILES = (
    "nsswitch.conf",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "alternatives",
    "localtime",
    "ssl",
    "ca-certificates",
    "mime.types",
)
SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")


def bwrap_path(path: str | None = None) -> str | None:
    """The bwrap executable on `path` (default: $PATH), or None when it is not installed."""
    return shutil.which("bwrap", path=path)


def agent_python() -> tuple[str, list[Path]]:
    """A python to run the agent inside the sandbox, and the extra prefixes it needs bound."""
    if os.access("/usr/bin/python3", os.X_OK):
        return "/usr/bin/python3", []
    exe = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    return exe, [Path(sys.base_prefix)]


def agent_command(agent_file: Path, path: str, args: list[str]) -> list[str]:
    """The command that starts the agent whose file is `agent_file`, found at `path` where it runs:
    the native build (`folders.native_agent`, `.bin`) runs itself, `_agent.py(c)` the system python."""
    if agent_file.suffix == ".bin":
        return [path, *args]
    return [agent_python()[0], "-I", "-S", path, *args]


def python_prefixes() -> list[Path]:
    """The running interpreter's prefixes (venv, base install) for `SandboxSpec.bind_python`."""
    prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
    return sorted(p for p in prefixes if not str(p).startswith("/usr"))


def system_args() -> list[str]:
    """Read-only system folders, keeping the host's /bin -> usr/bin style symlinks as symlinks."""
    args: list[str] = []
    for name in SYSTEM_DIRS:
        host = Path("/") / name
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def spec_mounts(
    spec: SandboxSpec,
    root: Path,
    workspace: Path | None,
    py_binds: list[Path],
    rw_sources: dict[Path, Path] | None,
    ro_sources: dict[Path, Path] | None = None,
) -> list[str]:
    """What `spec` binds into the sandbox, in order: read-only binds (the agent's python, `ro_binds`,
    the host python with `bind_python`), `rw_binds`, `ro_mounts` (from `ro_sources`, the sandbox's
    own holds on their staging binds, where given), the workspace, `out_dirs` (folders of the
    sandbox folder `root`), and the host's network with `spec.network`."""
    argv: list[str] = []
    base = root.parent
    binds = [*py_binds, *spec.ro_binds, *(python_prefixes() if spec.bind_python else [])]
    for path in dict.fromkeys(binds):
        argv += ["--ro-bind", str(staged(path, base)), str(path)]
    for path in spec.rw_binds:
        argv += ["--bind", str((rw_sources or {}).get(path, path)), str(path)]
    for source, inside in spec.ro_mounts:
        argv += ["--ro-bind", str((ro_sources or {}).get(source) or staged(source, base)), inside]
    if workspace is not None:
        argv += ["--bind", str(workspace), spec.mount_dir]
    for i, inside in enumerate(spec.out_dirs):  # made by the host (`Sandbox._prepare_folders`)
        argv += ["--bind", str(root / f"out-{i}"), inside]
    if spec.network:  # after --unshare-all: the host's network namespace, names resolved as on the host
        argv += ["--share-net", "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
    return argv


def build_argv(
    spec: SandboxSpec,
    root: Path,
    workspace: Path | None,
    agent_file: Path,
    *,
    fd_socket: int,
    seccomp_fd: int | None,
    rw_sources: dict[Path, Path] | None = None,
    ro_sources: dict[Path, Path] | None = None,
) -> list[str]:
    """The full bwrap command line that starts the agent inside a new sandbox rooted at `root`.

    `workspace` is the host folder bound at `spec.mount_dir` (None: an image root's own folder is
    the workspace; its overlay, `root/merged` (`overlay.py`), is bound as `/` in place of the host's
    system folders); `fd_socket` the descriptor (inherited) the agent receives output descriptors
    on; `seccomp_fd` one holding the BPF program, or None; `rw_sources` the folder to bind for each
    of `spec.rw_binds` (a per-sandbox staging bind), `ro_sources` for each source of
    `spec.ro_mounts` (`layout.hold_ro_mounts`).
    """
    bwrap = bwrap_path()
    if bwrap is None:
        raise FileNotFoundError("bwrap is not installed")
    image = spec.image_root is not None
    py_binds = [] if image else agent_python()[1]
    argv = [bwrap, "--unshare-all", "--unshare-user", "--die-with-parent"]
    argv += ["--new-session", "--as-pid-1", "--cap-drop", "ALL"]
    argv += ["--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID)]
    if seccomp_fd is not None:  # it refuses unshare, setns and clone(CLONE_NEWUSER) already
        argv += ["--seccomp", str(seccomp_fd)]
    else:  # no filter on this architecture: have bwrap forbid nested user namespaces (a fork more)
        argv += ["--disable-userns"]
    if image:  # the overlay holds its own /etc/{hosts,passwd,group} (etc_files), writable
        argv += ["--bind", str(root / "merged"), "/"]
    else:
        argv += system_args() + link_args()
        for name in etc_files(spec.home_dir):  # written per sandbox (Sandbox.start)
            argv += ["--ro-bind", str(root / name), f"/etc/{name}"]
    # bwrap covers /proc/sys only where the sandbox could write it; namespaced sysctls (IPC limits,
    # ns_last_pid) would stay writable: bind it read-only over the new /proc.
    argv += ["--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys", "--dev", "/dev"]
    argv += ["--bind", str(root / "tmp"), "/tmp", "--bind", str(root / "home"), spec.home_dir]
    argv += spec_mounts(spec, root, workspace, py_binds, rw_sources, ro_sources)
    agent = f"{AGENT_DIR}/agent" + ("" if agent_file.suffix == ".bin" else agent_file.suffix)
    argv += ["--ro-bind", str(staged(agent_file, root.parent)), agent]  # on an image, from the checkout
    argv += ["--ro-bind", str(root / "sock"), f"{AGENT_DIR}/sock"]
    argv += ["--chdir", spec.mount_dir, "--"]
    port = spec.listen_port if spec.endpoint is not None else 0
    args = [str(port), f"{AGENT_DIR}/sock/model.sock", "1", str(fd_socket)]
    return argv + agent_command(agent_file, agent, args)
