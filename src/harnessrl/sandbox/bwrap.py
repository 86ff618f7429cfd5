"""bubblewrap command lines: a read-only system, private HOME and /tmp, the workspace, no network.

Left out on purpose: seccomp filters (bwrap's --seccomp needs a compiled BPF program; the namespaces
already remove the network and the host's files), and cgroups (not writable on most CI machines; the
agent applies rlimits instead). Capabilities: bwrap drops them all for the sandboxed process.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from harnessrl.sandbox.spec import SandboxSpec

AGENT_DIR = "/opt/harnessrl"
"""Inside the sandbox: the agent script, its io folder and the endpoint socket folder live here."""

# Minimal /etc: users, the dynamic linker, alternatives symlinks, time zone, TLS roots (harmless; there
# is no network). resolv.conf is deliberately absent: there is nothing to resolve names with.
ETC_FILES = (
    "passwd",
    "group",
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


def bwrap_path() -> str | None:
    """The bwrap executable, or None when it is not installed."""
    return shutil.which("bwrap")


def agent_python() -> tuple[str, list[Path]]:
    """A python to run the agent inside the sandbox, and the extra prefixes it needs bound."""
    if os.access("/usr/bin/python3", os.X_OK):
        return "/usr/bin/python3", []
    exe = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    return exe, [Path(sys.base_prefix)]


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


def build_argv(spec: SandboxSpec, root: Path, workspace: Path, agent_file: Path, reap_all: bool) -> list[str]:
    """The full bwrap command line that starts the agent inside a new sandbox rooted at `root`."""
    bwrap = bwrap_path()
    if bwrap is None:
        raise FileNotFoundError("bwrap is not installed")
    python, py_binds = agent_python()
    argv = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += system_args()
    argv += ["--ro-bind", str(root / "hosts"), "/etc/hosts"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--bind", str(root / "tmp"), "/tmp", "--bind", str(root / "home"), spec.home_dir]
    binds = [*py_binds, *spec.ro_binds, *(python_prefixes() if spec.bind_python else [])]
    for path in dict.fromkeys(binds):
        argv += ["--ro-bind", str(path), str(path)]
    for path in spec.rw_binds:
        argv += ["--bind", str(path), str(path)]
    argv += ["--bind", str(workspace), spec.mount_dir]
    agent = f"{AGENT_DIR}/agent{agent_file.suffix}"
    argv += ["--ro-bind", str(agent_file), agent]
    argv += ["--bind", str(root / "io"), f"{AGENT_DIR}/io"]
    argv += ["--ro-bind", str(root / "sock"), f"{AGENT_DIR}/sock"]
    argv += ["--chdir", spec.mount_dir, "--"]
    port = spec.listen_port if spec.endpoint is not None else 0
    argv += [python, "-I", "-S", agent, str(port), f"{AGENT_DIR}/sock/model.sock"]
    argv += [f"{AGENT_DIR}/io", "1" if reap_all else "0"]
    return argv
