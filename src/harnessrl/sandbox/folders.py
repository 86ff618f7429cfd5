"""The sandbox base folder: where sandbox folders live, the compiled agent, and the sweep of folders
(and mounts) that a killed host process left behind."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from harnessrl.sandbox import identity
from harnessrl.sandbox.bwrap import agent_python
from harnessrl.sandbox.cgroups import SandboxCgroup
from harnessrl.sandbox.fscopy import remove_tree, write_new
from harnessrl.sandbox.identity import UidLease
from harnessrl.types import SandboxError

log = logging.getLogger(__name__)
AGENT_FILE = Path(__file__).with_name("_agent.py")
NATIVE_SOURCE = Path(__file__).with_name("agent.c")


def default_base_dir() -> Path:
    """See SandboxSpec.base_dir."""
    env = os.environ.get("HARNESSRL_SANDBOX_DIR")
    if env:
        return Path(env)
    name = "harnessrl" if os.geteuid() == 0 else f"harnessrl-{os.geteuid()}"  # one per user
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / name
    return Path(tempfile.gettempdir()) / name


_trusted: set[Path] = set()


def ensure_base(base: Path) -> None:
    """Make the sandbox base folder (0711) if needed and refuse one that someone else could have
    prepared or could change (`identity.ensure_private_dir`). The base holds what the host runs and
    trusts (the built agent, sandbox folders it mounts and chowns): in a shared /dev/shm another
    local user could otherwise create `harnessrl` first and swap the agent binary between our check
    and our run of it (root code execution, reproduced). PermissionError says what is wrong."""
    if base in _trusted:
        return
    identity.ensure_private_dir(base, 0o711, "sandbox base folder", "pick another ($HARNESSRL_SANDBOX_DIR)")
    _trusted.add(base)


def mark_owner(root: Path) -> None:
    """Write this process's pid to `root/owner`, which `sweep_stale` reads. The sandbox writes it
    twice: into the fresh folder, then onto its tmpfs once that is mounted over it. The first one is
    what a sweep finds when the tmpfs is gone but the folder is not: a process killed before its
    tmpfs had an owner file, or one whose tmpfs was mounted in a mount namespace that ended with it
    (`ip netns exec`, as in the two-node Ray test), used to leave an empty folder without an owner
    file, which no sweep removes."""
    if not os.path.lexists(root / "owner"):  # without a tmpfs, the second write finds the first
        write_new(root / "owner", str(os.getpid()).encode())


def new_root(base: Path) -> Path:
    """A new sandbox folder `hrl-sb-*` in `base`, 0711 (the sandbox uid's bwrap must reach home/,
    tmp/, sock/ to bind them), with its owner file (`mark_owner`: before any tmpfs goes over it).
    A failed owner write (a full base folder, say) takes the folder with it: a folder without an
    owner would be left for good."""
    root = Path(tempfile.mkdtemp(prefix="hrl-sb-", dir=base))
    try:
        root.chmod(0o711)
        mark_owner(root)
    except OSError:
        shutil.rmtree(root, ignore_errors=True)
        raise
    return root


def remove_root(root: Path, mounted: bool) -> None:
    """Remove a sandbox folder. A tmpfs root (and any bind under it) is lazily unmounted first, so
    nothing is deleted file by file and no bind mount's source is ever touched; then the owner file
    under it (`mark_owner`) and the folder."""
    if mounted:
        identity.unmount(root)
        with contextlib.suppress(OSError):
            (root / "owner").unlink(missing_ok=True)
            root.rmdir()
            return
    remove_tree(root)  # the agent's HOME and /tmp: any depth


def teardown(
    pid: int | None,
    root: Path,
    mounted: bool,
    cgroup: SandboxCgroup | None,
    lease: UidLease,
    held: list[tuple[Path, Path]] | None = None,
) -> None:
    """A sandbox's finaliser and the end of its destroy(): kill everything in it, remove its folder
    and cgroup, release the staging binds it `held` (emptying the list), give its uid back."""
    if cgroup is not None:
        cgroup.kill()
    if pid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
    remove_root(root, mounted)
    if cgroup is not None:
        cgroup.remove()
    while held:
        identity.release_staged(*held.pop())
    lease.release()


def _owner_alive(folder: Path) -> bool | None:
    """Whether the process that made `folder` still runs (None: no readable owner file)."""
    try:
        pid = int((folder / "owner").read_text())
    except (OSError, ValueError):
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def sweep_stale(base: Path | None = None) -> int:
    """Remove sandbox folders (and staging folders) whose creating process is gone: a host killed
    with SIGKILL runs no finaliser; its sandboxes' processes die with it, their folders and mounts
    stay. Returns how many went. Runs once per process on the first create; a folder without an
    owner file is left alone."""
    removed = 0
    root = base or default_base_dir()
    if not root.is_dir():
        return 0
    for folder in root.glob("hrl-sb-*"):
        if _owner_alive(folder) is False:
            remove_root(folder, mounted=os.path.ismount(folder))
            removed += 1
    for folder in root.glob("hrl-stage-*"):
        if _owner_alive(folder) is False:
            identity.remove_stage(folder)
    return removed


_build_threads = threading.Lock()


@contextlib.contextmanager
def _building(base: Path) -> Iterator[None]:
    """One builder of agent files at a time: a lock for this process's threads (sandboxes are
    created in threads) and an `flock` on `base` for other processes. Concurrent first builds used
    to write one temporary file at once, and the loser fell back to the slow agent for good, or ran
    a file another build was still writing."""
    with _build_threads:
        fd = os.open(base / ".build.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


_compiled: dict[tuple[str, Path], Path] = {}
_COMPILE = "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)"


def compiled_agent(python: str, base: Path | None = None) -> Path:
    """`_agent.py` compiled to a .pyc by the interpreter that will run it, cached in `base` (default:
    the default sandbox folder, whatever folder a sandbox itself uses).

    Running the .pyc saves compiling the agent's source at every sandbox start (~3 ms of ~30 on two
    cores). Compiled once per (interpreter, source) into a file named after both; any failure falls
    back to the source file, which works the same, only slower to start.
    """
    base = base or default_base_dir()
    key = (python, base)
    if key in _compiled:
        return _compiled[key]
    try:
        ensure_base(base)
        with _building(base):
            target = _compile_agent(python, base)
    except OSError as e:
        log.debug("sandbox agent: %s; running the source", e)
        target = AGENT_FILE
    _compiled[key] = target
    return target


def _compile_agent(python: str, base: Path) -> Path:
    source = AGENT_FILE.read_bytes()
    digest = hashlib.sha256(source + os.path.realpath(python).encode()).hexdigest()[:16]
    target = base / f"agent-{digest}.pyc"
    try:
        if not _ours(target):  # someone else's file, or not a file: do not run it
            raise PermissionError(f"{target} is not a private regular file of this uid")
    except FileNotFoundError:
        tmp = base / f".agent-{digest}.{os.getpid()}.pyc"
        try:
            subprocess.run(
                [python, "-I", "-S", "-c", _COMPILE, str(AGENT_FILE), str(tmp)],
                check=True,
                capture_output=True,
                timeout=30,
            )
            os.replace(tmp, target)
        except (OSError, subprocess.SubprocessError) as e:
            log.debug("sandbox agent: compiling with %s failed (%s); running the source", python, e)
            tmp.unlink(missing_ok=True)
            target = AGENT_FILE
    return target


_native: dict[Path, Path | None] = {}


def _ours(path: Path) -> bool:
    """A regular file (not a link) of this uid that nobody else may write: safe to run."""
    st = os.lstat(path)
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def c_compiler(path: str | None = None) -> str | None:
    """The C compiler that builds the native agent: `cc`, `gcc` or `clang` on `path` (default: $PATH)."""
    return next((p for p in (shutil.which(n, path=path) for n in ("cc", "gcc", "clang")) if p), None)


def native_agent(base: Path | None = None) -> Path | None:
    """`agent.c` built by the system C compiler, cached in `base` (default: the default sandbox
    folder) as `agent-<digest>.bin`; None when it cannot be had (no compiler, the build fails, the
    folder does not let it execute (`noexec`)), logged once per process, and the sandbox then runs
    `_agent.py`. Built once per (source, compiler), statically linked where the C library allows;
    built under `_building`'s locks into a temporary name and renamed, so no thread or process ever
    runs a half-written file.
    """
    base = base or default_base_dir()
    if base in _native:
        return _native[base]
    cc = c_compiler()
    target: Path | None = None
    why = "no C compiler (cc, gcc, clang) on PATH"
    if cc is not None:
        digest = hashlib.sha256(NATIVE_SOURCE.read_bytes() + os.path.realpath(cc).encode()).hexdigest()[:16]
        target = base / f"agent-{digest}.bin"
        try:
            ensure_base(base)
            with _building(base):
                if not target.exists():
                    _build_native(cc, target)
            if not _ours(target):
                raise PermissionError(f"{target} is not a private regular file of this uid")
            # It must run here: no argument is a usage error (exit 2), with no side effect.
            probe = subprocess.run([str(target)], capture_output=True, timeout=10)
            if probe.returncode != 2:
                raise OSError(f"{target} exited {probe.returncode} on its usage check")
        except (OSError, subprocess.SubprocessError) as e:
            why, target = f"{type(e).__name__}: {e}", None
    if target is None:
        log.warning(
            "sandbox agent: the native agent is unavailable (%s); using _agent.py (~12 ms slower start)", why
        )
    _native[base] = target
    return target


def _build_native(cc: str, target: Path) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}")
    error: Exception | None = None
    try:
        for static in (["-static"], []):  # no static C library: link dynamically
            cmd = [cc, "-O2", "-std=gnu11", *static, "-o", str(tmp), str(NATIVE_SOURCE)]
            try:
                subprocess.run(cmd, check=True, capture_output=True, timeout=120)
            except subprocess.CalledProcessError as e:
                error = e
                continue
            tmp.chmod(0o755)
            os.replace(tmp, target)
            return
        stderr = (
            error.stderr.decode(errors="replace")[-500:]
            if isinstance(error, subprocess.CalledProcessError)
            else ""
        )
        raise OSError(f"building {NATIVE_SOURCE.name} failed: {stderr.strip()}")
    finally:
        tmp.unlink(missing_ok=True)


def agent_program(kind: str, image_root: bool = False) -> Path:
    """The agent file a sandbox starts (see SandboxSpec.agent): the native build (`.bin`), or
    `_agent.py` compiled for the system python; on an image root, whose python may be another
    version, the source itself. Run it in a thread: the first call may build the native one."""
    if kind == "auto":
        kind = os.environ.get("HARNESSRL_SANDBOX_AGENT") or "auto"
    if kind not in ("auto", "native", "python"):
        raise SandboxError(f"HARNESSRL_SANDBOX_AGENT={kind!r}: expected native, python or auto")
    if kind != "python":
        native = native_agent()
        if native is not None:
            return native
        if kind == "native":
            raise SandboxError("the native sandbox agent is unavailable (the log says why); use python")
    if image_root:
        return AGENT_FILE
    return compiled_agent(agent_python()[0])


_swept: set[Path] = set()


def sweep_once(base: Path) -> None:
    """`sweep_stale(base)` the first time this process uses `base`. A sweep that fails is logged,
    never raised: leftovers of dead processes must not stop this process's sandboxes."""
    if base not in _swept:
        _swept.add(base)
        try:
            sweep_stale(base)
        except OSError as e:
            log.warning("sweeping stale sandbox folders in %s failed: %s", base, e)
