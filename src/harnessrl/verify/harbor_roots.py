"""What a Harbor verifier's sandbox runs on (`VerifierRoot`), and what of the agent's changes reaches it.

    HostRoot(agent_env)            the host's read-only root plus the agent environment; the changes
                                   are the final workspace, copied to the workdir (`load_workspace`)
    ImageVerifierRoot(image, wd)   the task's image as `/`; the changes are a copy of the agent's
                                   writable layer (`Sandbox.destroy(keep_layer=)`), stacked over it

The layer rule (image roots). Before the verifier's sandbox is made, `admit` takes out of the copy:

1. Everything under the system folders /usr /bin /sbin /lib /lib32 /lib64 /libx32 /etc: what the
   agent added there, changed (a copy-up), replaced or deleted (whiteouts) alike. The programs the
   tests run with (bash, python3 and its modules, pytest, the dynamic loader and what it preloads)
   are the image's: an agent that replaces python3, shadows it earlier on PATH
   (/usr/local/bin/python3), adds a `.pth` or `sitecustomize.py`, or writes /etc/ld.so.preload
   changes nothing the tests run.
2. Files and links at the top of `/` (/conftest.py, /pytest.ini, /setup.cfg, /pyproject.toml), and
   its hidden folders and /node_modules (/.git, /.cargo, /.mvn, /node_modules/semver): `/` is the
   one folder above /tests that is not ours, and tools run on /tests look for their configuration
   and modules there (pytest's rootdir and conftest.py search, git's repository, cargo's config and
   Node's module resolution walk up from /tests).
3. The folders the image's environment names for its programs (`runtime_folders`): each folder on
   its PATH outside the system folders, with its prefix when it is a `bin` (/opt/venv/bin: all of
   /opt/venv, its site-packages too), and the folders of PYTHONPATH, LD_LIBRARY_PATH, NODE_PATH,
   VIRTUAL_ENV, CONDA_PREFIX and the like: an image that puts its python in /opt/venv runs the tests
   with it, so the agent's replacement or `.pth` there is dropped as under /usr.
4. Whatever lies where the verifier mounts its own folders (/tests, /logs/verifier, its HOME /root,
   /tmp, /proc, /dev, /sys, /opt/harnessrl), and on the way to these and the folders of 3 anything
   that is not a folder: a link /logs -> elsewhere is dropped, never followed by the mount.

The working folder is kept whole, even inside a system folder (/usr/src/app) or a folder of 3.
Everything else is kept: /opt, /srv, /var, /home, new top-level folders that are not hidden (an
answer written to /output). A working folder that the agent turned into a
link or a file is refused (the policy's failure, reward 0). What was dropped is counted in the
check's result (`CheckResult.dropped`, `dropped_count`; files only, and not the /etc/passwd, group
and hosts and the agent program's mount point that every image sandbox leaves).

What the rule costs a task: an answer installed into a system folder (a binary in /usr/local/bin, a
module in /usr/lib/python3/dist-packages) is not seen by the tests. Rollouts have no network, so
installing packages was not open to the agent; building into /usr/local is, and scores as not done.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harnessrl.images.spec import ImageRoot
from harnessrl.sandbox.fscopy import remove_tree
from harnessrl.sandbox.sandbox import Sandbox
from harnessrl.sandbox.spec import SandboxSpec
from harnessrl.verify.command_runner import checker_env
from harnessrl.verify.sandboxed import load_workspace

SYSTEM_FOLDERS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc")
SEARCHED_AT_TOP = ("node_modules",)
"""Folders at the top of `/` that tools find from /tests by walking up, beside every hidden one."""
PATH_LISTS = ("PATH", "PYTHONPATH", "LD_LIBRARY_PATH", "NODE_PATH", "GEM_PATH", "PERL5LIB", "CLASSPATH")
PREFIXES = (
    "VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONHOME", "PYTHONUSERBASE", "JAVA_HOME", "GOROOT", "GOPATH",
    "CARGO_HOME", "RUSTUP_HOME", "GEM_HOME", "NVM_DIR", "PNPM_HOME", "BUN_INSTALL", "DENO_INSTALL",
)  # fmt: skip
"""The image variables that name where its programs and their modules are (`runtime_folders`)."""
MOUNTED = ("tests", "logs/verifier", "tmp", "proc", "dev", "sys", "opt/harnessrl")
"""Where the verifier's sandbox mounts its own folders (and its HOME), relative to `/`."""
WRITTEN_BY_US = frozenset({"etc/passwd", "etc/group", "etc/hosts", "opt/harnessrl/agent"})
"""What every image sandbox leaves in its layer: the files `overlay.py` writes, the agent's mount point."""
MAX_LISTED = 50


@dataclass
class Admission:
    """What `admit` did to the changes: why they were refused ("" = they were not), and what of
    them was left out (the first `MAX_LISTED` files, and how many)."""

    refused: str = ""
    dropped: list[str] = field(default_factory=list)
    count: int = 0


class VerifierRoot(Protocol):
    """What a Harbor verifier's sandbox runs on, and how what the agent changed gets into it."""

    def admit(self, changes: Path) -> Admission:
        """Before the sandbox: take out of `changes` (the host's copy) what the tests must not see."""
        ...

    def spec(self, base: SandboxSpec, changes: Path) -> SandboxSpec:
        """`base` with this root as the sandbox's `/` (everything else of `base` kept)."""
        ...

    def env(self) -> dict[str, str]:
        """The tests' environment before the task's `[verifier] env`."""
        ...

    def load(self, sb: Sandbox, changes: Path) -> str:
        """Copy what the agent changed into `sb` once it runs, bounded; why not, or ""."""
        ...


@dataclass(frozen=True)
class HostRoot:
    """The host's read-only root plus the agent environment (first on PATH, its python the tests'
    `python3`); the changes are the final workspace, copied to the workdir."""

    agent_env: Path | None = None
    workdir: str = "/app"

    def admit(self, changes: Path) -> Admission:
        return Admission()

    def spec(self, base: SandboxSpec, changes: Path) -> SandboxSpec:
        env = () if self.agent_env is None else (self.agent_env,)
        update = {"ro_binds": (*base.ro_binds, *env), "path_prefix": tuple(str(p / "bin") for p in env)}
        return base.model_copy(update={**update, "bind_python": True, "mount_dir": self.workdir})

    def env(self) -> dict[str, str]:
        python = Path(self.agent_env or "/usr") / "bin" / "python3"
        return checker_env("/root", str(python))

    def load(self, sb: Sandbox, changes: Path) -> str:
        return load_workspace(sb, changes)


@dataclass(frozen=True)
class ImageVerifierRoot:
    """The task's image as `/`, the agent's layer (admitted by the rule above) stacked over it."""

    image: ImageRoot
    workdir: str

    @property
    def home(self) -> str:
        """The tests' HOME: /root, unless the working folder is there (then a folder of its own)."""
        inside_root = self.workdir == "/root" or self.workdir.startswith("/root/")
        return "/home/verifier" if inside_root else "/root"

    def admit(self, changes: Path) -> Admission:
        return admit_layer(changes, self.workdir, self.home, runtime_folders(self.image.env))

    def spec(self, base: SandboxSpec, changes: Path) -> SandboxSpec:
        update = {"image_root": self.image.path, "layers": (changes,), "extra_env": dict(self.image.env)}
        update |= {"mount_dir": self.workdir, "home_dir": self.home, "bind_python": False}
        return base.model_copy(update=update)

    def env(self) -> dict[str, str]:
        return {"HOME": self.home, "TMPDIR": "/tmp", "LANG": "C.UTF-8"}

    def load(self, sb: Sandbox, changes: Path) -> str:
        return ""  # the layer is in the sandbox's root already


def _kind(st: os.stat_result) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "a link"
    if stat.S_ISCHR(st.st_mode):
        return "deleted"
    return "a file" if stat.S_ISREG(st.st_mode) else "not a folder"


def _drop(layer: Path, rel: str, into: Admission) -> None:
    """Remove `layer/rel` (any depth, no link followed), counting the files under it."""
    stack = [rel]
    while stack:
        here = stack.pop()
        try:
            st = os.lstat(layer / here)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            stack += [f"{here}/{name}" for name in sorted(os.listdir(layer / here))]
        elif here not in WRITTEN_BY_US:
            into.count += 1
            if len(into.dropped) < MAX_LISTED:
                into.dropped.append(f"/{here}" + ("" if stat.S_ISREG(st.st_mode) else f" ({_kind(st)})"))
    remove_tree(layer / rel)


def _drop_except(layer: Path, rel: str, keep: str, into: Admission) -> None:
    """`_drop` `layer/rel`, except the folder `keep` under it and the folders on the way there."""
    if rel == keep:
        return
    if not keep.startswith(rel + "/"):
        _drop(layer, rel, into)
        return
    try:
        st = os.lstat(layer / rel)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        _drop(layer, rel, into)
        return
    for name in sorted(os.listdir(layer / rel)):
        _drop_except(layer, f"{rel}/{name}", keep, into)


def _not_folders_on_the_way(layer: Path, rel: str) -> list[tuple[str, os.stat_result]]:
    """The first entry on the path `rel` in `layer` that exists and is not a folder, if any."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        here = "/".join(parts[:i])
        try:
            st = os.lstat(layer / here)
        except OSError:
            return []
        if not stat.S_ISDIR(st.st_mode):
            return [(here, st)]
    return []


def runtime_folders(env: Mapping[str, str]) -> list[str]:
    """The folders (relative to `/`) that the image environment `env` runs its programs from, outside
    the system folders (rule 3): each absolute entry of the `PATH_LISTS` variables (a `bin` or
    `sbin` as its parent, the prefix with its libraries), and each `PREFIXES` folder."""
    named = [(p, True) for var in PATH_LISTS for p in env.get(var, "").split(":")]
    named += [(env.get(var, ""), False) for var in PREFIXES]
    found: list[str] = []
    for path, listed in named:
        if not path.startswith("/"):
            continue
        rel = os.path.normpath(path).strip("/")
        if listed and rel.rsplit("/", 1)[-1] in ("bin", "sbin") and "/" in rel:
            rel = rel.rsplit("/", 1)[0]
        if rel and rel.split("/")[0] not in SYSTEM_FOLDERS and rel not in found:
            found.append(rel)
    return found


def admit_layer(layer: Path, workdir: str, home: str, runtime: Sequence[str] = ()) -> Admission:
    """Apply the module's rule to the layer copy `layer` (in place); `runtime`: rule 3's folders."""
    into = Admission()
    keep = workdir.strip("/")
    for here, st in _not_folders_on_the_way(layer, keep):
        if not stat.S_ISCHR(st.st_mode):  # a deleted working folder is made again, empty
            into.refused = f"the working folder {workdir} is no longer a folder: /{here} is {_kind(st)}"
            return into
    for name in SYSTEM_FOLDERS:
        if os.path.lexists(layer / name):
            _drop_except(layer, name, keep, into)
    for entry in sorted(os.scandir(layer), key=lambda e: e.name):
        if entry.is_dir(follow_symlinks=False):
            searched = entry.name.startswith(".") or entry.name in SEARCHED_AT_TOP
            if searched and entry.name != keep.split("/")[0]:
                _drop(layer, entry.name, into)
        elif entry.is_file(follow_symlinks=False) or entry.is_symlink():
            _drop(layer, entry.name, into)
    ours = [r for r in runtime if r != keep and not r.startswith(keep + "/")]  # the work is kept whole
    for mounted in (*MOUNTED, home.strip("/"), *ours):
        for here, _ in _not_folders_on_the_way(layer, mounted):
            _drop(layer, here, into)
        if os.path.lexists(layer / mounted):
            _drop_except(layer, mounted, keep, into)
    into.dropped.sort()
    return into
