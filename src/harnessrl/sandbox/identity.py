"""Who a sandbox runs as on the host, and the host-side mounts that go with it.

A sandbox never runs as host root. When harnessrl itself runs as root (CI, containers), each live
sandbox leases a host uid of its own from a range no account uses (`UID_BASE` ..), held by an
`flock` on a lock file in one folder per machine (`uid_lock_dir()`, whatever the sandbox base
folder), so two harnessrl processes on one machine never hand out the same uid, and a lease of a
process that died frees itself. One uid per sandbox makes RLIMIT_NPROC a per-sandbox process cap
and keeps sandboxes from signalling each other. When harnessrl runs as an ordinary user, sandboxes run as that
user (already unprivileged): no lease, no chown, no host mounts.

Running as root, the host also mounts, in its own mount namespace:
- a size- and inode-limited tmpfs per sandbox (its home, /tmp and a pooled workspace live there:
  the disk quota, and teardown is one lazy unmount instead of deleting a million files);
- bind mounts that stage folders the sandbox uid could not reach (a repository under a 0700 /root,
  pytest's 0700 temporary folders) inside the sandbox base folder, where bwrap, already running as
  the sandbox uid, can bind them from.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import os
import stat
import threading
from dataclasses import dataclass
from pathlib import Path

from harnessrl.types import SandboxError

UID_BASE = 2_000_000_000
"""First host uid handed to sandboxes (far above login and subordinate-uid ranges)."""
UID_COUNT = 65536
LOCK_PARENTS = (Path("/run"), Path("/dev/shm"), Path("/tmp"))
"""The uid lease locks live in `harnessrl-uids` under the first of these that root may write: the
same folder for every harnessrl process of the machine, whatever its `$HARNESSRL_SANDBOX_DIR`
(leases kept per base folder let two processes with different base folders lease one uid)."""
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC = (
    0x1,
    0x2,
    0x4,
    0x8,
    0x20,
    0x1000,
    0x4000,
)
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 0x400, 0x800, 0x200000
MNT_DETACH = 0x2
SYS_MOUNT_SETATTR, AT_FDCWD, AT_SYMLINK_NOFOLLOW, AT_RECURSIVE = 442, -100, 0x100, 0x8000
"""mount_setattr(2) (Linux 5.12; syscall numbers from 424 on are the same on every architecture)."""
MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 0x2, 0x4
_KEPT_FLAGS = (
    (os.ST_RDONLY, MS_RDONLY),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)
"""What a bind's remount must say again to keep it (a remount sets every per-mount flag)."""

_libc: ctypes.CDLL | None = None


def _c() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    return _libc


def drops_privileges() -> bool:
    """True when harnessrl runs as root and so gives each sandbox an unprivileged uid of its own."""
    return os.geteuid() == 0


@dataclass
class UidLease:
    """A host uid (and gid) reserved for one sandbox until `release()`."""

    uid: int
    fd: int | None

    def release(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def uid_lock_dir() -> Path:
    """The machine's one folder of uid lease locks (`LOCK_PARENTS`)."""
    parent = next((p for p in LOCK_PARENTS if p.is_dir() and os.access(p, os.W_OK)), LOCK_PARENTS[-1])
    return parent / "harnessrl-uids"


def ensure_private_dir(path: Path, mode: int, what: str, remedy: str) -> None:
    """Make `path` (with `mode`) if needed and refuse one that someone else could have prepared or
    could change: it must be a real folder of this uid that nobody else may write, and every folder
    above it must belong to root or this uid and be writable by nobody else unless sticky (as
    /dev/shm and /tmp are). PermissionError says what is wrong (`what` names the folder's role) and
    ends with `remedy`."""
    path.mkdir(mode=mode, parents=True, exist_ok=True)
    me = os.geteuid()
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != me or st.st_mode & 0o022:
        raise PermissionError(
            f"{what} {path} is not a folder of uid {me} that only it may write (it is "
            f"{stat.filemode(st.st_mode)}, uid {st.st_uid}): someone else may have made it; remove it, or "
            f"{remedy}"
        )
    given, real = Path(os.path.abspath(path)), path.resolve()
    for parent in (*given.parents, *real.parents):  # a link on the way must be root's or ours too
        st = os.lstat(parent)
        shared = st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX and not stat.S_ISLNK(st.st_mode)
        if st.st_uid not in (0, me) or shared:
            raise PermissionError(
                f"{what} {path}: its parent {parent} ({stat.filemode(st.st_mode)}, uid "
                f"{st.st_uid}) could be changed by another user; {remedy}"
            )


_lock_dirs: set[Path] = set()


def lease_uid(base: int = UID_BASE, count: int = UID_COUNT, *, start: int | None = None) -> UidLease:
    """A free uid in [base, base+count): the first, from `start` (default: one derived from the pid,
    so processes rarely probe the same locks), whose lock file in `uid_lock_dir()` we can flock
    exclusively. The lock is the lease: it is held by this open file, so it ends with `release()`
    or with the process, however it dies. PermissionError when the lock folder is not root's own."""
    if not drops_privileges():
        return UidLease(os.getuid(), None)
    lock_dir = uid_lock_dir()
    if lock_dir not in _lock_dirs:
        ensure_private_dir(lock_dir, 0o700, "uid lease folder", f"make {lock_dir.parent} root's own")
        _lock_dirs.add(lock_dir)
    first = (os.getpid() * 7919) % count if start is None else start % count
    for i in range(count):
        uid = base + (first + i) % count
        fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise OSError(f"no free sandbox uid in {base}..{base + count - 1}")


def chown_tree(root: Path, uid: int) -> None:
    """lchown `root` and everything under it to uid:uid without following any link."""
    from harnessrl.sandbox.fscopy import walk  # iterative: an agent's folders may be 1,500 deep

    os.lchown(root, uid, uid)
    for _, _, entries in walk(root):
        for entry in entries or ():
            with contextlib.suppress(FileNotFoundError):
                os.lchown(entry.path, uid, uid)


def _mount(source: str, target: Path, fstype: str | None, flags: int, data: str | None) -> None:
    args = (source.encode(), str(target).encode(), fstype.encode() if fstype else None, flags)
    if _c().mount(*args, data.encode() if data else None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def mount_tmpfs(target: Path, size_mb: int, max_files: int) -> bool:
    """A fresh tmpfs of at most `size_mb` MiB and `max_files` inodes on `target`; False if this
    process may not mount (no CAP_SYS_ADMIN), in which case `target` stays a plain folder."""
    try:
        options = f"size={size_mb}m,nr_inodes={max_files},mode=0711"
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options)
    except OSError:
        return False
    return True


def bind_mount(source: Path, target: Path) -> None:
    """Bind `source` (and the mounts under it) on `target`, nosuid and nodev: a staged bind sits
    where every host uid may reach it, and a setuid file a sandbox made in a folder it writes (its
    workspace) or a device node must not work through it for them (a local user ran a sandbox's
    setuid python that way and held a host process of the leased uid). Writable if `source` is.
    The bind is undone if it cannot be made nosuid."""
    _mount(str(source), target, None, MS_BIND | MS_REC, None)
    try:
        _nosuid_nodev(target)
    except OSError:
        unmount(target)
        raise


class _MountAttr(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint64) for name in ("attr_set", "attr_clr", "propagation", "userns_fd")]


def _nosuid_nodev(target: Path) -> None:
    """Make the mount on `target` and every mount under it nosuid and nodev, leaving its other flags
    (mount_setattr with AT_RECURSIVE); on a kernel without it, the top mount only, by a bind
    remount that says its other flags again."""
    attr = _MountAttr(MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, 0)
    path = ctypes.c_char_p(str(target).encode())
    flags = ctypes.c_long(AT_RECURSIVE | AT_SYMLINK_NOFOLLOW)
    size = ctypes.c_size_t(ctypes.sizeof(attr))
    if (
        _c().syscall(
            ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_long(AT_FDCWD), path, flags, ctypes.byref(attr), size
        )
        == 0
    ):
        return
    err = ctypes.get_errno()
    if err != errno.ENOSYS:
        raise OSError(err, f"making the bind on {target} nosuid: {os.strerror(err)}")
    kept = os.statvfs(target).f_flag
    extra = sum(ms for st, ms in _KEPT_FLAGS if kept & st)
    _mount("none", target, None, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | extra, None)


def unmount(target: Path) -> None:
    """Lazily detach whatever is mounted on `target` (and under it); no error if nothing is."""
    _c().umount2(str(target).encode(), MNT_DETACH)


def reachable_by_others(path: Path) -> bool:
    """True when every folder above `path`, and `path` itself when it is a folder, lets any uid
    through (o+x), so bwrap running as the sandbox uid can open it (a file needs no x bit)."""
    for parent in [*reversed(path.parents), path]:
        try:
            st = os.stat(parent)
        except OSError:
            return False
        if stat.S_ISDIR(st.st_mode) and not st.st_mode & 0o001:
            return False
    return True


_staged: dict[tuple[Path, Path], Path] = {}
_holds: dict[tuple[Path, Path], int] = {}
"""How many live sandboxes hold each bind staged with `held` (`release_staged`)."""
_pinned: set[tuple[Path, Path]] = set()
"""Binds staged for the whole process (no hold): the stable cache folders, the agent."""
_stage_dirs: set[Path] = set()
"""The staging folders this process made (a folder of its name that is not here is a dead process's)."""
_stage_lock = threading.Lock()
"""staged() and unstage() run in several threads (sandboxes in the event loop's, installs in
asyncio.to_thread): two first calls raced on mkdir, and two for one source stacked two binds."""
UNMOUNT_ROUNDS = 64
"""At most this many binds are taken off one mount point (a bind stacked on a bind)."""


def stage_dir(base: Path) -> Path:
    """This process's staging folder under the sandbox base folder (swept with its sandboxes)."""
    return base / f"hrl-stage-{os.getpid()}"


def staged(source: Path, base: Path, *, held: bool = False) -> Path:
    """`source` itself when the sandbox uid can reach it; else a bind mount of it in this process's
    staging folder under `base` (made once per process and source), which it can. Kept until the
    process exits (or calls `unstage_all`), unless `held`: then it is one hold of a sandbox on it,
    and the bind goes with the last `release_staged` (a folder staged per verification: a checker's
    copy, Harbor's tests, /solution; one bind per verification stayed for the run and slowed every
    sandbox start)."""
    source = source.resolve()
    if not drops_privileges() or reachable_by_others(source):
        return source
    with _stage_lock:
        key = (source, base)
        if key not in _staged or not _staged[key].exists():
            _staged[key] = _bind_staged(source, base)
        if held:
            _holds[key] = _holds.get(key, 0) + 1
        else:
            _pinned.add(key)
        return _staged[key]


def release_staged(source: Path, base: Path) -> None:
    """End one hold on `source`'s staging bind (`staged(held=True)`, `source` as resolved then): the
    last one unmounts it and removes its mount point, unless it is also staged for the process (no
    hold). No error when it holds none (a reachable source is never staged)."""
    with _stage_lock:
        key = (source, base)
        left = _holds.get(key, 0) - 1
        if left > 0:
            _holds[key] = left
            return
        _holds.pop(key, None)
        if left < 0 or key in _pinned or key not in _staged:
            return
        _remove_mount_point(_staged.pop(key))


def _bind_staged(source: Path, base: Path) -> Path:
    """Bind `source` in this process's staging folder under `base`. Under _stage_lock."""
    target = _stage_folder(base) / hashlib.sha256(str(source).encode()).hexdigest()[:16]
    bind_reachable(source, target)
    return target


def bind_reachable(source: Path, target: Path) -> None:
    """Bind `source` (nosuid, nodev) on `target`, made first as a folder or an empty file like it.
    SandboxError when this process may not mount (no CAP_SYS_ADMIN), saying what to do instead."""
    if source.is_dir():
        target.mkdir(exist_ok=True)
    else:
        target.touch(exist_ok=True)
    try:
        bind_mount(source, target)
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EACCES):  # a source gone, say: the mount's own error
            raise
        raise SandboxError(  # no CAP_SYS_ADMIN (root in a default container)
            f"{source} is under a folder the sandbox uids cannot pass through (no o+x), and this "
            f"process may not bind-mount it where they can ({os.strerror(e.errno or 0)}): give its "
            "parents o+x, or move it (the harness cache: HARNESSRL_CACHE)"
        ) from e


def _stage_folder(base: Path) -> Path:
    """This process's staging folder under `base`, made on first use with its owner file (and the
    exit hook that takes it down). A folder already at its name was left by a dead process whose pid
    came back: it is cleared first (binds stacked on its entries, its owner file last), never reused
    (a bind stacked there outlived every sweep in a folder without an owner). Under _stage_lock."""
    folder = stage_dir(base)
    if folder in _stage_dirs:
        return folder
    remove_stage(folder)
    folder.mkdir(mode=0o711, parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(folder / "owner", flags, 0o644)
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)
    if not _stage_dirs:
        atexit.unregister(unstage_all)  # once, however often the folders come and go
        atexit.register(unstage_all)
    _stage_dirs.add(folder)
    return folder


def unmount_all(target: Path) -> None:
    """Lazily detach every mount stacked on `target` until it is no mount point (EINVAL) or is gone."""
    path = str(target).encode()
    for _ in range(UNMOUNT_ROUNDS):
        if _c().umount2(path, MNT_DETACH) != 0:
            return


def _remove_mount_point(target: Path) -> None:
    """Take every bind off `target`, then remove it (the empty folder or file it was made as)."""
    unmount_all(target)
    with contextlib.suppress(OSError):
        target.rmdir() if target.is_dir() and not target.is_symlink() else target.unlink()


def unstage(base: Path) -> None:
    """Unmount this process's staged binds under `base` and forget them: call it before removing
    `base` (a recursive delete would go through a live bind into its source)."""
    with _stage_lock:
        _unstage_locked(base)


def _unstage_locked(base: Path) -> None:
    for key in [k for k in _staged if k[1] == base]:
        unmount_all(_staged.pop(key))
        _holds.pop(key, None)
        _pinned.discard(key)


def remove_stage(folder: Path) -> None:
    """Remove a staging folder (a dead process's, or this one's at exit): take every bind off each
    entry, then the empty mount points, and the owner file last, only once all else is gone (so a
    folder that keeps a bind is swept again later). Never a recursive delete: a bind that would not
    unmount still shows its source's files. A folder that another process's sweep removes first is
    no error (Ray workers starting together all sweep)."""
    try:
        entries = [e for e in folder.iterdir() if e.name != "owner"]
    except OSError:
        return
    for entry in entries:
        _remove_mount_point(entry)
    try:
        if any(e.name != "owner" for e in folder.iterdir()):
            return
    except OSError:
        return
    with contextlib.suppress(OSError):
        (folder / "owner").unlink()
        folder.rmdir()


def unstage_all() -> None:
    """Take every bind this process staged down, and its staging folders with them (they made
    folders other uids cannot enter reachable for this process's sandboxes only). Runs at exit; a
    process that will be killed rather than exit (a Ray worker: `ray.kill`) calls it when it closes.
    A killed process leaves them to the next process's sweep. Under the staging lock: a sandbox that
    stages meanwhile waits, then starts a new folder (sandboxes already running keep their binds:
    each is its own copy in the sandbox's mount namespace)."""
    mine = stage_dir(Path()).name
    with _stage_lock:
        for folder in list(_stage_dirs):
            if folder.name == mine:  # not a forked child's copy of its parent's bookkeeping
                _unstage_locked(folder.parent)
                remove_stage(folder)
                _stage_dirs.discard(folder)
