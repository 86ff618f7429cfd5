"""Installing harnesses from npm into a project-local cache, safely under concurrency.

    <cache root>/harnesses/<name>-<version>/node_modules/...

The cache root is `$HARNESSRL_CACHE`, else `.cache` in the source checkout, else `~/.cache/harnessrl`.
Installs take an exclusive `flock` on `<dir>.lock`, build into a temporary sibling folder and rename
it into place, with a `.installed` marker written last: a crashed or concurrent install never leaves a
half-populated folder that looks ready. Nothing is ever upgraded in place: a new pinned version is a
new folder.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from harnessrl.cache import cache_root
from harnessrl.types import HarnessError

MARKER = ".installed"
NPM_TIMEOUT_S = 900.0


def harness_dir(cache: Path | None = None) -> Path:
    """The folder holding every installed harness: bind this read-only into sandboxes."""
    path = (cache or cache_root()) / "harnesses"
    path.mkdir(parents=True, exist_ok=True)
    return path


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
