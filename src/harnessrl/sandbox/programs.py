"""The programs an agent sandbox shows on PATH: a fixed list, the same on every machine.

A sandbox on the host's root binds the host's `/usr` read-only, so what a harness would find by
searching PATH used to be whatever the host had installed: Hermes adds 10 `browser_*` tools to its
prompt when `chromium` is on PATH, so CI, a developer's machine and a training node trained on
different prompts. Now PATH inside holds no host folder: it is `PROGRAMS_DIR`, a folder of links
(made by bwrap, `--symlink`) to the host's copy of each name in `programs.txt` (Debian 12's
essential tools, python3, perl, git, gcc/make, curl/wget, jq, sqlite3, node/npm), after the agent
environment's `bin/` (`SandboxSpec.path_prefix`: `python`, `pytest`). A program outside the list
(chromium, a browser, docker, an editor the host happens to have) is not on PATH inside, on any
machine; `missing_programs()` names the listed ones this host lacks (`harnessrl doctor` shows them).
Programs stay reachable by absolute path (`/usr/bin/...`): the list fixes what a PATH search
finds, which is what harnesses probe, not what an agent could run (that is not a boundary).

On an image the image's own PATH folders are used (the image is the same everywhere already), and
on the `local` backend the host's PATH (no isolation at all): `Sandbox.command_env` puts those in
place of `PROGRAMS_DIR`.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from importlib import resources

PROGRAMS_DIR = "/opt/programs"
"""Inside a sandbox on the host's root: the folder of links that is PATH (after the agent env)."""
HOST_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
"""Where the host's copies are looked for, in this order (the standard system PATH)."""
SYSTEM_PATH = os.pathsep.join(HOST_DIRS)


@functools.cache
def program_names() -> tuple[str, ...]:
    """The names of `programs.txt` (comments and blank lines left out), in order."""
    text = resources.files("harnessrl.sandbox").joinpath("programs.txt").read_text(encoding="utf-8")
    lines = (line.strip() for line in text.splitlines())
    return tuple(line for line in lines if line and not line.startswith("#"))


def _host_copy(name: str, dirs: Sequence[str] = HOST_DIRS) -> str | None:
    for folder in dirs:
        path = os.path.join(folder, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


@functools.cache
def host_programs() -> tuple[tuple[str, str], ...]:
    """(name, host path) of each listed program this host has, by `HOST_DIRS` order (cached: a
    rollout's sandboxes all see the same set)."""
    found = ((name, _host_copy(name)) for name in program_names())
    return tuple((name, path) for name, path in found if path is not None)


def missing_programs(dirs: Sequence[str] | None = None) -> list[str]:
    """The listed programs this host does not have in `dirs` (default `HOST_DIRS`: they are then
    missing from PATH inside)."""
    if dirs is None:
        have = {name for name, _ in host_programs()}
        return [name for name in program_names() if name not in have]
    return [name for name in program_names() if _host_copy(name, dirs) is None]


def link_args() -> list[str]:
    """bwrap arguments that make `PROGRAMS_DIR` with one link per program of this host."""
    args: list[str] = []
    for name, path in host_programs():
        args += ["--symlink", path, f"{PROGRAMS_DIR}/{name}"]
    return args


def inside_path(path: str, system: str) -> str:
    """`path` (a PATH value) with the entry `PROGRAMS_DIR` replaced by `system` (an image's or the
    local backend's system PATH); unchanged when it has no such entry."""
    parts = path.split(os.pathsep)
    if PROGRAMS_DIR not in parts:
        return path
    return os.pathsep.join(system if p == PROGRAMS_DIR else p for p in parts)
