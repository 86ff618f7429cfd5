"""A sandbox's folder on the host, and how what it binds becomes reachable to its uid.

    out_fds = make_folders(root, spec, uid, host_workspace)     # owner, home, tmp, sock, /etc files, out-N
    source = reachable_in(root, tmpfs, path, "ws")               # path, or a bind of it in the tmpfs
    held = hold_ro_mounts(spec, root, tmpfs, ro_sources)         # per-sandbox binds of ro_mounts

`Sandbox._prepare_folders` calls these once its uid is leased (and its tmpfs mounted): bubblewrap
starts as that uid, so every folder it binds must be one that uid can enter.
"""

from __future__ import annotations

import os
from pathlib import Path

from harnessrl.sandbox import bwrap, identity
from harnessrl.sandbox.folders import mark_owner
from harnessrl.sandbox.spec import SandboxSpec
from harnessrl.types import SandboxError


def make_folders(root: Path, spec: SandboxSpec, uid: int, host_workspace: Path) -> dict[str, int]:
    """The folders of the sandbox folder `root` (its owner pid, home, tmp, sock, the /etc files of a
    host-root sandbox, a fresh workspace when none is given, and one `out-N` per `spec.out_dirs`),
    the sandbox's own given to `uid`. Returns a descriptor of each out folder by where it is bound
    (the host reads what the sandbox left there through it, never by path)."""
    mark_owner(root)  # again: on the sandbox's tmpfs, when it has one
    for sub in ("home", "tmp", "sock"):
        (root / sub).mkdir()
    image = spec.image_root is not None
    for name, text in () if image else bwrap.etc_files(spec.home_dir).items():
        (root / name).write_text(text)
    if spec.workspace is None and not image:
        host_workspace.mkdir()
        os.chown(host_workspace, uid, uid)
    for sub in ("home", "tmp"):
        os.chown(root / sub, uid, uid)
    fds: dict[str, int] = {}
    for i, inside in enumerate(spec.out_dirs):  # bound at `inside` (bwrap.build_argv)
        (root / f"out-{i}").mkdir(mode=0o700)
        os.chown(root / f"out-{i}", uid, uid)
        flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
        fds[inside] = os.open(root / f"out-{i}", flags)
    return fds


def reachable_in(root: Path, tmpfs: bool, path: Path, name: str) -> Path:
    """`path`, or a bind of it at `root/name` in the sandbox's tmpfs when the sandbox uid cannot
    enter it (it goes with the tmpfs's lazy unmount)."""
    if not identity.drops_privileges() or identity.reachable_by_others(path):
        return path
    if not tmpfs:
        raise SandboxError(
            f"{path} is under a folder the sandbox uid cannot enter, and this process may not "
            "bind-mount it; use a folder whose parents are all o+x"
        )
    identity.bind_reachable(path, root / name)
    return root / name


def hold_ro_mounts(
    spec: SandboxSpec, root: Path, tmpfs: bool, ro_sources: dict[Path, Path]
) -> list[tuple[Path, Path]]:
    """Bind each source of `spec.ro_mounts` the sandbox uid cannot reach for this sandbox only (into
    `ro_sources`); returns the staging binds held, to release at teardown.

    They are the per-verification folders (a checker's copy, Harbor's tests, /solution), each a
    fresh temporary folder, whose process-wide staging binds stayed until the process exited (one
    host mount per verification, each slowing every later sandbox start) and left the hidden tests
    readable by any local user through the 0711 staging folder while they ran. In its tmpfs (a
    folder only its uid may pass, gone with the tmpfs's lazy unmount); without one, a hold on a
    process-wide staging bind (`identity.staged(held=True)`). `ro_binds` are the stable caches,
    staged once per process."""
    held: list[tuple[Path, Path]] = []
    if not identity.drops_privileges():
        return held
    base = root.parent
    for i, (source, _) in enumerate(spec.ro_mounts):
        resolved = source.resolve()
        if source in ro_sources or identity.reachable_by_others(resolved):
            continue
        if tmpfs:
            ro_sources[source] = root / f"ro-{i}"
            identity.bind_reachable(resolved, ro_sources[source])
        else:
            ro_sources[source] = identity.staged(resolved, base, held=True)
            held.append((resolved, base))
    return held
