"""A Python 3.13 for the harnesses that need a newer Python than the host's (Debian 12 has 3.11).

    root = ensure_runtime()[0]      # <cache>/runtimes/python3.13-<digest>, made once per machine
    runtime_python(root)            # its interpreter: <root>/usr/local/bin/python3.13
    runtime_argv(alias)             # what that launcher runs, for the runtime reached at another path

The runtime is a Debian 13 (trixie) minbase root with python3, python3-venv, python3-pip and
ca-certificates, written by `mmdebstrap` as a tar on stdout (`base.mmdebstrap_argv`, as the base
image is; the Debian mirror is the only network it needs) and unpacked by us: regular files,
folders and links only (device nodes and fifos are left out), every entry ours, folders 0755 and
files 0755 or 0644 (as `harnesses.confine.seal` leaves an install: no setuid, setgid or sticky bit,
nothing writable by group or others). It is never run as a root filesystem: its
interpreter runs on the host's (or a sandbox's) filesystem through its own dynamic loader,
`usr/local/bin/python3.13` being a launcher script

    exec <root>/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 --library-path <root>/usr/lib/x86_64-linux-gnu \
         --argv0 "$0" <root>/usr/bin/python3.13 "$@"

so Debian 13's glibc and libraries serve that process alone (no LD_LIBRARY_PATH reaches what it
starts: the agent's shell commands run on the system's own), and `--argv0 "$0"` lets a venv made by
it (whose `bin/python` links to the launcher) find its `pyvenv.cfg`. Sandboxes bind `runtimes_dir()`
read-only at its own path (`harnesses.launch.harness_binds`), so the launcher's paths hold there.

Made under a lock (`store.locked`) in a temporary sibling, checked (the interpreter runs and says
3.13), then its marker is written and it is renamed into place. An entry is used only when `ready`
says so: a folder (not a link) of ours that nobody else may write, whose marker (a regular file)
names this recipe's digest and whose launcher is the one we would write; anything else at its name
(half made, left by a crash, changed by someone) is removed and made again. Built in 49-56 s on 2
cores (most of it downloading and unpacking ~40 Debian packages); 131 MB of files.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import stat
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import IO

from harnessrl.cache import cache_root
from harnessrl.images.base import EXCLUDES, mmdebstrap_argv, mmdebstrap_error
from harnessrl.images.store import locked, missing_tools
from harnessrl.types import ImageError

PYTHON = "3.13"
SUITE = "trixie"
PACKAGES = ("python3", "python3-venv", "python3-pip", "ca-certificates")
LIBS = "usr/lib/x86_64-linux-gnu"
LOADER = f"{LIBS}/ld-linux-x86-64.so.2"
LAUNCHER = f"usr/local/bin/python{PYTHON}"
MARKER = ".harnessrl-runtime"
MARKER_MAX = 4096
BUILD_TIMEOUT_S = 1800.0


def runtimes_dir(cache: Path | None = None, *, make: bool = False) -> Path:
    """`<cache root>/runtimes`: every runtime (bind it read-only into sandboxes). Made when `make`."""
    path = (cache or cache_root()) / "runtimes"
    if make:
        path.mkdir(parents=True, exist_ok=True)
    return path


def runtime_digest() -> str:
    """12 hex digits naming the recipe: the suite, the packages, the left-out paths, the launcher."""
    recipe = {
        "suite": SUITE,
        "packages": PACKAGES,
        "excludes": EXCLUDES,
        "launcher": launcher_text(Path("/")),
    }
    return hashlib.sha256(json.dumps(recipe, sort_keys=True).encode()).hexdigest()[:12]


def runtime_root(cache: Path | None = None) -> Path:
    """Where the runtime lives (whether or not it is there: computing it makes nothing)."""
    return runtimes_dir(cache) / f"python{PYTHON}-{runtime_digest()}"


def runtime_python(root: Path) -> Path:
    """The interpreter (its launcher) of the runtime at `root`."""
    return root / LAUNCHER


def runtime_argv(root: Path) -> list[str]:
    """The command the launcher runs (module docstring), for the runtime found at `root`: where the
    runtime is reached at another path than the one its launcher names (a staging bind, for a uid
    that cannot pass through the folders above the real one), run this, not the launcher."""
    return [
        str(root / LOADER),
        "--library-path",
        str(root / LIBS),
        "--argv0",
        str(root / LAUNCHER),
        str(root / f"usr/bin/python{PYTHON}"),
    ]


def launcher_text(root: Path) -> str:
    """The launcher script of a runtime at `root` (module docstring)."""
    loader = shlex.join([str(root / LOADER), "--library-path", str(root / LIBS)])
    python = shlex.quote(str(root / f"usr/bin/python{PYTHON}"))
    return f'#!/bin/sh\nexec {loader} --argv0 "$0" {python} "$@"\n'


def ready(root: Path) -> bool:
    """Whether `root` holds a finished runtime of this recipe that we may trust (module docstring)."""
    me = os.geteuid()
    try:
        st = os.lstat(root)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != me or st.st_mode & 0o022:
            return False
        marker = _read_ours(root / MARKER, me)
        launcher = _read_ours(root / LAUNCHER, me)
        info = json.loads(marker) if marker is not None else None
    except (OSError, ValueError):
        return False
    digest_ok = isinstance(info, dict) and info.get("digest") == runtime_digest()
    return digest_ok and launcher == launcher_text(root).encode()


def _read_ours(path: Path, me: int) -> bytes | None:
    """The bytes of `path` when it is a regular file (not a link) of ours that nobody else may
    write, at most MARKER_MAX of them; else None."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != me or st.st_mode & 0o022 or st.st_size > MARKER_MAX:
            return None
        return os.read(fd, MARKER_MAX)
    finally:
        os.close(fd)


def ensure_runtime(cache: Path | None = None, mirror: str | None = None) -> tuple[Path, float]:
    """The runtime's root, made first if no trustworthy one is there; and the seconds that took (0.0
    when it was there). ImageError when it cannot be made (the tools, the mirror)."""
    root = runtime_root(cache)
    if ready(root):
        return root, 0.0
    with locked(f"runtime-python{PYTHON}"):
        if ready(root):  # another process made it while we waited
            return root, 0.0
        _remove(root)  # half made, left by a crash, or not ours: never used
        started = time.monotonic()
        runtimes_dir(cache, make=True)
        work = Path(tempfile.mkdtemp(prefix=f".{root.name}-", dir=root.parent))
        try:
            _build(work, root, mirror)
            seconds = time.monotonic() - started
            info = {
                "digest": runtime_digest(),
                "python": PYTHON,
                "suite": SUITE,
                "seconds": round(seconds, 1),
            }
            info["bytes"] = _size(work)
            (work / MARKER).write_text(json.dumps(info) + "\n")
            work.chmod(0o755)
            work.rename(root)
        except BaseException:
            _remove(work)
            raise
        return root, seconds


def _build(work: Path, root: Path, mirror: str | None) -> None:
    """Unpack mmdebstrap's tar into `work`, write the launcher for its final place `root`, and check
    that the interpreter runs there (it is checked through `work`'s own launcher first)."""
    missing = missing_tools(["mmdebstrap"])
    if missing:
        raise ImageError(f"the Python {PYTHON} runtime needs {missing[0]}: run scripts/setup as root")
    with tempfile.TemporaryFile() as err:
        argv = mmdebstrap_argv(mirror, suite=SUITE, packages=PACKAGES)
        debootstrap = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL)
        assert debootstrap.stdout is not None
        try:
            unpack_root(debootstrap.stdout, work)
        except (tarfile.TarError, OSError) as e:
            debootstrap.kill()
            raise ImageError(f"unpacking the Python {PYTHON} runtime: {e}") from e
        finally:
            debootstrap.stdout.close()
            debootstrap.wait(timeout=BUILD_TIMEOUT_S)
        why = mmdebstrap_error(err)
    if debootstrap.returncode != 0:
        raise ImageError(f"mmdebstrap could not make the Python {PYTHON} runtime ({SUITE}): {why}")
    launcher = work / LAUNCHER
    launcher.parent.mkdir(parents=True, exist_ok=True)
    launcher.write_text(launcher_text(work))
    launcher.chmod(0o755)
    _check(launcher)
    launcher.write_text(launcher_text(root))


def _check(launcher: Path) -> None:
    code = "import sys, venv, ssl; print('%d.%d' % sys.version_info[:2])"
    done = subprocess.run([str(launcher), "-I", "-c", code], capture_output=True, text=True, timeout=60)
    if done.returncode != 0 or done.stdout.strip() != PYTHON:
        why = (done.stderr.strip() or done.stdout.strip())[-300:]
        raise ImageError(f"the Python {PYTHON} runtime in {launcher.parents[3]} does not run: {why}")


def unpack_root(stream: IO[bytes], dest: Path) -> None:
    """Extract the tar `stream` into `dest` (module docstring: what is kept and how)."""
    me, group = os.geteuid(), os.getegid()

    def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        if not (member.isreg() or member.isdir() or member.issym() or member.islnk()):
            return None
        member = tarfile.tar_filter(member, path)  # no absolute or escaping paths; no high mode bits
        mode = 0o755 if member.isdir() or (member.mode or 0) & 0o100 else 0o644
        return member.replace(uid=me, gid=group, uname="", gname="", mode=mode, deep=False)

    with tarfile.open(fileobj=stream, mode="r|") as tar:
        tar.extractall(dest, numeric_owner=True, filter=keep)


def _remove(path: Path) -> None:
    """Remove whatever is at `path`, without following a link there or below."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _size(root: Path) -> int:
    """Bytes of the regular files under `root` (links not followed)."""
    total = 0
    for folder, _, files in os.walk(root):
        for name in files:
            st = os.lstat(os.path.join(folder, name))
            total += st.st_size if stat.S_ISREG(st.st_mode) else 0
    return total
