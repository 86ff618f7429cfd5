"""Running what a harness install runs without trusting it: an unprivileged uid, a minimal environment,
a sandbox for the few install scripts a CLI needs, and the finished tree handed back sealed.

A package registry is third-party code. The installers (`install.py`) therefore:
- run `npm install` / `pip download` (the steps that need the network) as a uid of their own, leased
  like a sandbox's (`sandbox.identity.lease_uid`; the caller's own uid when harnessrl is not root), in a
  scratch HOME, with `install_env`: PATH, HOME, LANG and only the registry settings in `REGISTRY_ENV`,
  never the host's other variables (API keys, tokens);
- run package code (npm lifecycle scripts a CLI cannot work without; a wheel install into the venv)
  only inside a sandbox (`run_in_sandbox`: no network, its own uid, no host secrets);
- `seal` the result: every entry owned by us, writable by us only, no setuid, setgid or sticky bit,
  before it is renamed into the cache folder that sandboxes bind read-only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import stat
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from harnessrl.sandbox import identity
from harnessrl.sandbox.folders import default_base_dir, ensure_base
from harnessrl.sandbox.fscopy import walk
from harnessrl.sandbox.sandbox import SYSTEM_PATH, Sandbox
from harnessrl.sandbox.spec import ExecResult, SandboxSpec
from harnessrl.sandbox.sync import run_sync
from harnessrl.types import HarnessError, SandboxError

REGISTRY_ENV = (
    "npm_config_registry",
    "NPM_CONFIG_REGISTRY",
    "npm_config_cafile",
    "NPM_CONFIG_CAFILE",
    "npm_config_fetch_retries",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_TRUSTED_HOST",
    "PIP_CERT",
    "PIP_DEFAULT_TIMEOUT",
    "PIP_RETRIES",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
)
"""The host variables an install sees (when set): where the registries are and how to reach them
(and how often to try). Nothing else of the host's environment is passed."""
log = logging.getLogger(__name__)
SCRIPT_MEMORY_MB = 4096
"""Memory cap of the sandbox that runs install scripts and wheel installs."""


def install_env(home: Path, path_prefix: Sequence[str] = (), **extra: str) -> dict[str, str]:
    """The whole environment of an install step: PATH (`path_prefix` first), HOME, LANG, the
    registry settings of `REGISTRY_ENV` that the host sets, and `extra`."""
    env = {"PATH": os.pathsep.join([*path_prefix, SYSTEM_PATH]), "HOME": str(home), "LANG": "C.UTF-8"}
    env |= {k: os.environ[k] for k in REGISTRY_ENV if os.environ.get(k)}
    return env | extra


def reachable(folder: Path) -> Path:
    """A path to `folder` that a leased uid can enter: `folder` itself when every parent is o+x
    (or harnessrl is not root), else the sandboxes' staging bind of it (`identity.staged`)."""
    if not identity.drops_privileges() or identity.reachable_by_others(folder):
        return folder
    base = default_base_dir()
    ensure_base(base)
    try:
        return identity.staged(folder, base)
    except SandboxError as e:  # an install error, said as one
        raise HarnessError(str(e)) from e


@contextlib.contextmanager
def unprivileged(*owned: Path) -> Iterator[int | None]:
    """Lease a uid and give it `owned` (folders it writes); yields the uid to run as, None when
    harnessrl is not root (it already is unprivileged). The lease ends on exit."""
    lease = identity.lease_uid()
    try:
        if identity.drops_privileges():
            for folder in owned:
                identity.chown_tree(folder, lease.uid)
            yield lease.uid
        else:
            yield None
    finally:
        if not identity.drops_privileges() or kill_uid(lease.uid):
            lease.release()  # else kept (with its uid) until this process ends: never handed on


KILL_ROUNDS = 50


def kill_uid(uid: int) -> bool:
    """SIGKILL every process of `uid` (never root's, nor the caller) and wait until none is left
    running; False if some still runs after KILL_ROUNDS tries (~1 s), logged. A child of an install
    step that left `run_as`'s process group (setsid) would otherwise keep running as the uid after
    its lease ends, and the next lease may hand that uid to a sandbox. `kill -1` run as `uid` reaches
    exactly its processes (its exit status says nothing: 0 while any other process exists)."""
    kill = ["/bin/sh", "-c", "kill -s KILL -- -1"]
    for _ in range(KILL_ROUNDS):
        if not running_as(uid):
            return True
        with contextlib.suppress(HarnessError):  # a kill that hangs: the next round tries again
            run_as(uid, kill, env={"PATH": SYSTEM_PATH}, cwd=Path("/"), timeout_s=10, what="kill -1")
        time.sleep(0.02)
    left = running_as(uid)
    if left:
        log.warning("processes %s of uid %d survived SIGKILL; the uid stays leased until exit", left, uid)
    return not left


def running_as(uid: int) -> list[int]:
    """Pids whose real, effective or saved uid is `uid`, zombies (which run nothing) left out."""
    pids = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:  # gone meanwhile
            continue
        if uid in map(int, fields.get("Uid", "").split()[:3]) and not fields.get(
            "State", ""
        ).strip().startswith(("Z", "X")):
            pids.append(int(entry.name))
    return pids


def run_as(
    uid: int | None, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, timeout_s: float, what: str
) -> subprocess.CompletedProcess[str]:
    """Run `argv` as `uid` (None: as we are) with exactly `env`, in its own process group (killed
    after it ends or times out, so nothing it started outlives it). HarnessError on a timeout or a
    program that cannot start; the caller reads the return code."""
    ids: dict[str, Any] = {} if uid is None else {"user": uid, "group": uid, "extra_groups": []}
    try:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            umask=0o022,
            start_new_session=True,
            **ids,
        )
    except OSError as e:  # the program is not there, or this uid may not run it
        who = "" if uid is None else f" as uid {uid}"
        raise HarnessError(f"{what}: cannot run {argv[0]}{who} ({e.strerror})") from e
    with proc:
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            raise HarnessError(f"{what} timed out after {timeout_s:.0f} s") from None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_in_sandbox(
    folder: Path,
    script: str,
    *,
    env: Mapping[str, str],
    timeout_s: float,
    what: str,
    ro_binds: Sequence[Path] = (),
) -> None:
    """Run `sh -c script` inside a sandbox (no network, a uid of its own, no host secrets) with
    `folder` bound read-write at its own path as the working folder; `ro_binds` read-only at their
    own paths, for this sandbox only (`SandboxSpec.ro_mounts`: a bind of a temporary folder, the
    downloaded wheels, staged for the whole process stayed until it exited).
    HarnessError, saying `what` failed, when it fails or no sandbox can be made here."""

    async def go() -> ExecResult:
        spec = SandboxSpec(
            workspace=folder,
            mount_dir=str(folder),
            ro_mounts=tuple((p, str(p)) for p in ro_binds),  # per sandbox: the wheels are temporary
            memory_mb=SCRIPT_MEMORY_MB,
            max_file_mb=None,
            start_timeout_s=60.0,
        )
        async with await Sandbox.create(spec) as sb:
            argv = ["/bin/sh", "-c", script]
            return await sb.exec(argv, env=dict(env), cwd=str(folder), timeout_s=timeout_s)

    try:
        res = run_sync(go())
    except SandboxError as e:
        raise HarnessError(f"{what} needs a sandbox (it runs package code), and: {e}") from e
    if res.returncode != 0:
        why = (res.error or res.stderr.strip() or res.stdout.strip())[-2000:]
        raise HarnessError(f"{what} failed (in a sandbox, exit {res.returncode}): {why}")


def seal(root: Path) -> None:
    """Make the tree at `root` ours and read-only to everyone else, without following any link:
    folders 0755, files 0755 or 0644 (by their owner's x bit), no setuid, setgid or sticky bit."""
    me = os.geteuid()
    _seal_one(root, me)
    for rel, _, entries in walk(root):
        for entry in entries or ():
            _seal_one(root / rel / entry.name, me)


def _seal_one(path: Path, me: int) -> None:
    st = os.lstat(path)
    if st.st_uid != me or st.st_gid != os.getegid():
        os.lchown(path, me, os.getegid())
    if stat.S_ISLNK(st.st_mode):
        return
    mode = 0o755 if stat.S_ISDIR(st.st_mode) or st.st_mode & stat.S_IXUSR else 0o644
    if stat.S_IMODE(st.st_mode) != mode:  # not a link (lstat), and no process of its old uid is left
        os.chmod(path, mode)
