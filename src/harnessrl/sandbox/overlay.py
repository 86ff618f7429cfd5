"""An image as a sandbox's `/`: its unpacked root, read-only, under a writable overlay on the tmpfs.

When `SandboxSpec.image_root` is set, the host (root, in its own mount namespace, like the tmpfs in
`identity.py`) builds the sandbox's root inside the sandbox folder before bwrap starts:

    lower-0 .. lower-n   read-only clones of each layer (`SandboxSpec.layers`, then the image root),
                         idmapped so that host uid and gid 0 (the image's root) appear as the
                         sandbox's leased uid, which is uid 1000 inside: the agent may change any
                         path the image's root owned. Files of other image uids appear as nobody.
    layer/upper, work    the overlay's writable layer and work folder, on the sandbox's tmpfs: its
                         size and inode caps bound everything the agent writes (ENOSPC past them)
    merged               the overlay (nosuid, nodev; no redirects, index or metacopy: the upper
                         layer holds whole files, whiteouts and opaque folders only), bound by
                         bwrap as `/`

Nothing the agent does reaches the image: the lower clones are read-only mounts and copy-up writes
to the upper layer only. Everything lives under the sandbox folder, so its lazy unmount at
teardown takes it all. `/etc/passwd`, `/etc/group` and `/etc/hosts` are written into the upper
layer (root, agent = uid 1000, nobody), so the agent may rewrite them as it may any file.
Needs root with CAP_SYS_ADMIN and a kernel with idmapped mounts under overlayfs (5.19 or later).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from harnessrl.sandbox import bwrap, identity
from harnessrl.sandbox.fscopy import TreeReport, copy_untrusted, write_new
from harnessrl.sandbox.spec import SandboxSpec
from harnessrl.types import SandboxError

# Syscall numbers from 424 on are the same on every architecture.
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442
OPEN_TREE_CLONE, AT_FDCWD, AT_EMPTY_PATH, AT_RECURSIVE = 1, -100, 0x1000, 0x8000
MOVE_MOUNT_F_EMPTY_PATH = 0x4
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV, MOUNT_ATTR_IDMAP = 0x1, 0x2, 0x4, 0x100000
OVERLAY_OPTIONS = "redirect_dir=off,index=off,metacopy=off,xino=off"
"""Fixed so that the upper layer holds whole files, whiteouts and opaque folders only, whatever the
kernel's defaults: what `layers.copy_layer` carries to the next sandbox."""
UNSHARE = shutil.which("unshare") or "/usr/bin/unshare"


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _syscall(nr: int, *args: object, what: str) -> int:
    ret = int(identity._c().syscall(ctypes.c_long(nr), *args))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


_userns: dict[int, int] = {}
_userns_lock = threading.Lock()


def userns_fd(uid: int) -> int:
    """A descriptor of a user namespace mapping uid and gid 0 to `uid` (an idmapped mount's map),
    made once per uid and process: a short-lived `unshare --user` child, whose maps the host writes,
    and whose namespace lives on in the descriptor after the child is gone. Leases reuse a few uids,
    so this costs ~5-10 ms the first time a uid is seen and nothing after."""
    with _userns_lock:
        if uid not in _userns:
            _userns[uid] = _new_userns(uid)
        return _userns[uid]


def _new_userns(uid: int, timeout_s: float = 10.0) -> int:
    child = subprocess.Popen(
        [UNSHARE, "--user", "--", "cat"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        mine = os.readlink("/proc/self/ns/user")
        deadline = time.monotonic() + timeout_s
        while os.readlink(f"/proc/{child.pid}/ns/user") == mine:
            if child.poll() is not None or time.monotonic() > deadline:
                raise OSError(f"`unshare --user` made no user namespace (exit {child.returncode})")
            time.sleep(0.0002)
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{child.pid}/{name}", "w") as f:
                f.write(f"0 {uid} 1\n")
        return os.open(f"/proc/{child.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        child.kill()
        child.wait()


def idmapped_clone(source: Path, target: Path, uid: int) -> None:
    """Mount a read-only, nosuid, nodev clone of the tree at `source` on the folder `target`, with
    ids 0 shown as `uid` (`userns_fd`). OSError when the kernel or the file system refuses."""
    libc_path = ctypes.c_char_p(str(source).encode())
    flags = OPEN_TREE_CLONE | os.O_CLOEXEC | AT_RECURSIVE
    fd = _syscall(SYS_OPEN_TREE, ctypes.c_long(AT_FDCWD), libc_path, ctypes.c_long(flags), what="open_tree")
    try:
        attr = _MountAttr(MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
        attr.userns_fd = userns_fd(uid)
        _syscall(
            SYS_MOUNT_SETATTR,
            ctypes.c_long(fd),
            ctypes.c_char_p(b""),
            ctypes.c_long(AT_EMPTY_PATH | AT_RECURSIVE),
            ctypes.byref(attr),
            ctypes.c_size_t(ctypes.sizeof(attr)),
            what=f"idmapping {source}",
        )
        _syscall(
            SYS_MOVE_MOUNT,
            ctypes.c_long(fd),
            ctypes.c_char_p(b""),
            ctypes.c_long(AT_FDCWD),
            ctypes.c_char_p(str(target).encode()),
            ctypes.c_long(MOVE_MOUNT_F_EMPTY_PATH),
            what=f"attaching {source} on {target}",
        )
    finally:
        os.close(fd)


def mount_image_root(
    root: Path, lowers: Sequence[Path], uid: int, etc: Mapping[str, str], workdir: str
) -> Path:
    """Build the overlay of the module docstring in the sandbox folder `root` (on its tmpfs): the
    trees `lowers` (top first, the image root last) under a writable layer owned by `uid`, holding
    `etc` (file name -> text, written to `/etc`) and the folder `workdir`. Returns the merged root.
    OSError when a mount is refused; a `workdir` under a link of the image is refused too."""
    upper, work, merged = root / "layer" / "upper", root / "layer" / "work", root / "merged"
    for folder in (upper, work, merged):
        folder.mkdir(parents=True)
    os.chown(upper, uid, uid)
    upper.chmod(0o755)
    (upper / "etc").mkdir(mode=0o755)
    os.chown(upper / "etc", uid, uid)
    for name, text in etc.items():
        write_new(upper / "etc" / name, text.encode(), uid=uid)
    clones = []
    for i, lower in enumerate(lowers):
        clone = root / f"lower-{i}"
        clone.mkdir()
        idmapped_clone(lower, clone, uid)
        clones.append(str(clone))
    options = f"lowerdir={':'.join(clones)},upperdir={upper},workdir={work},{OVERLAY_OPTIONS}"
    identity._mount("overlay", merged, "overlay", identity.MS_NOSUID | identity.MS_NODEV, options)
    os.close(open_beneath(merged, workdir, make_uid=uid))
    return merged


def open_beneath(top: Path, rel: str, *, make_uid: int | None = None) -> int:
    """A descriptor of the folder `top/rel`, reached without following any link (the agent may have
    replaced a component with one): OSError (ELOOP, ENOTDIR) otherwise. With `make_uid`, missing
    folders are made on the way (0755, owned by it). Read the folder as `/proc/self/fd/<fd>`."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for part in [p for p in rel.split("/") if p not in ("", ".")]:
            if part == "..":
                raise OSError(f"{rel!r} climbs out of the root")
            if make_uid is not None:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o755, dir_fd=fd)
                    os.chown(part, make_uid, make_uid, dir_fd=fd, follow_symlinks=False)
            sub = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def prepare_root(root: Path, spec: SandboxSpec, uid: int, mountable: bool, name: str) -> Path:
    """`mount_image_root` for the sandbox folder `root` of `spec` (an image sandbox), whose tmpfs
    `mountable` says it has: the merged root. SandboxError says what is missing."""
    image = spec.image_root
    assert image is not None
    if not mountable:
        raise SandboxError(
            f"an image root ({image}) needs the bwrap backend, harnessrl running as root (it mounts) "
            "and a size-limited tmpfs for the writable layer (SandboxSpec.disk_mb)"
        )
    for tree in (*spec.layers, image):
        if not tree.is_dir():
            raise SandboxError(
                f"image root or layer {tree} is not a folder (`harnessrl env build` unpacks one)"
            )
    workdir = spec.mount_dir if spec.workspace is None else "/"
    etc = bwrap.etc_files(spec.home_dir)
    try:
        return mount_image_root(root, [*spec.layers, image], uid, etc, workdir)
    except OSError as e:
        raise SandboxError(f"sandbox {name}: mounting image root {image}: {e}") from e


def keep(
    spec: SandboxSpec, root: Path, workspace: Path, keep_workspace: Path | None, keep_layer: Path | None
) -> TreeReport:
    """`Sandbox.destroy`'s copy, once every process of the sandbox is dead: its writable layer to
    `keep_layer` (`copy_untrusted(layer=True)`), or its final `workspace` to `keep_workspace`; in an
    image root that folder is reached without following a link (the agent may have put one
    anywhere on the way). Caps: `spec.max_files` and `spec.disk_mb`."""
    files, size = spec.max_files, (spec.disk_mb or 1 << 20) * 2**20
    if keep_layer is not None:
        return copy_untrusted(
            root / "layer" / "upper", keep_layer, max_files=files, max_bytes=size, layer=True
        )
    assert keep_workspace is not None
    if spec.image_root is None:
        return copy_untrusted(workspace, keep_workspace, max_files=files, max_bytes=size)
    try:
        fd = open_beneath(root / "merged", spec.mount_dir)
    except OSError as e:
        return TreeReport(truncated=f"the workspace {spec.mount_dir} is no longer a folder: {e}")
    try:
        return copy_untrusted(Path(f"/proc/self/fd/{fd}"), keep_workspace, max_files=files, max_bytes=size)
    finally:
        os.close(fd)
