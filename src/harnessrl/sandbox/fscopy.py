"""Host-side handling of trees the agent wrote: copy, clean and read them without trusting them.

Everything here runs after every process of the sandbox is dead, so nothing changes under our feet;
the danger is what the agent left behind. Rules: never follow a link (`lstat`, `O_NOFOLLOW`), never
open anything but a regular file (a FIFO would block, `/dev/zero` never ends), never read more than a
bound, and keep only links that stay inside the tree (a link through `/proc/self/cwd` or to `/etc`
would hand the checker, or the artifact writer running as root, a host file).

`copy_untrusted` copies holes as holes (a 3 GB sparse file stays 3 GB sparse, and counts by the data
in it) and stops at a cap on files and bytes; `sanitize_tree` applies the same rules in place to a
workspace that was bound from the host.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

CHUNK = 1 << 20
MAX_DEPTH = 64


@dataclass
class TreeReport:
    """What a copy or clean-up did: counts, and what it left out and why (first 50)."""

    files: int = 0
    bytes: int = 0
    skipped: list[str] = field(default_factory=list)
    skipped_count: int = 0
    truncated: str = ""
    """Non-empty when a cap stopped the walk: which cap."""

    def skip(self, rel: str, why: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < 50:
            self.skipped.append(f"{rel}: {why}")

    def summary(self) -> dict[str, object]:
        return {
            "files": self.files,
            "bytes": self.bytes,
            "skipped": self.skipped,
            "skipped_count": self.skipped_count,
            "truncated": self.truncated,
        }


def walk(root: Path) -> Iterator[tuple[str, int, list[os.DirEntry[str]] | None]]:
    """Every folder under `root`, root first, as (its path relative to `root`, "" for root; its depth;
    its entries by name, or None when it cannot be read: a path past PATH_MAX, say). Without recursion
    (os.walk's recursion overflowed on a folder 1,500 deep that an agent made) and without following
    links: only real folders are entered. Removing an entry from the yielded list before going on
    keeps that folder from being entered."""
    stack = [("", 0, str(root))]
    while stack:
        rel, depth, path = stack.pop()
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            yield rel, depth, None
            continue
        yield rel, depth, entries
        for entry in reversed(entries):
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    stack.append((f"{rel}/{entry.name}" if rel else entry.name, depth + 1, entry.path))


def remove_tree(path: Path) -> None:
    """Remove a tree an agent may have made, whatever its depth, following no link and never crossing
    into another file system (`rm -rf --one-file-system` walks by descriptors; shutil.rmtree recurses
    once per folder and overflowed on a folder 1,500 deep). A missing path is fine."""
    if not os.path.lexists(path):
        return
    rm = shutil.which("rm")
    if rm is None:
        shutil.rmtree(path, ignore_errors=True)
        return
    subprocess.run([rm, "-rf", "--one-file-system", "--", str(path)], capture_output=True, check=False)


def link_stays_inside(rel_dir: str, target: str) -> bool:
    """A link at `rel_dir/<name>` pointing at `target` resolves inside the tree, whatever the other
    links of the tree are. Kept: a relative target that may climb out of the link's own folder with
    leading `..` (that folder and its parents are real folders of the tree, so climbing them is what
    it says, and it must not climb past the top), then only goes down (names, no `..`). Going down
    through another kept link lands inside by the same rule, so a chain of kept links stays inside.
    Refused: absolute targets and any `..` after a name: the kernel resolves `name/..` physically,
    so with `l -> .` the text `l/l/../..` climbs two real folders while it reads as staying put."""
    if not target or os.path.isabs(target):
        return False
    parts = [p for p in target.split("/") if p not in ("", ".")]
    ups = 0
    while ups < len(parts) and parts[ups] == "..":
        ups += 1
    if ".." in parts[ups:]:
        return False
    depth = len([p for p in rel_dir.split("/") if p not in ("", ".")])
    return ups <= depth


def write_new(path: Path, data: bytes, *, uid: int | None = None) -> None:
    """Write `data` to `path` as a new regular file (0644, owned by `uid` when given): created
    exclusively and never through a link, so nothing an untrusted tree left at that name (a link to
    a host file, a FIFO) is written through or blocked on: FileExistsError instead. A write that
    fails removes the file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if uid is not None:
            os.fchown(fd, uid, uid)
    except BaseException:  # a full disk, say: no empty or partial file is left at the name
        with contextlib.suppress(OSError):
            os.unlink(path)
        raise
    finally:
        os.close(fd)


def _copy_file(src_fd: int, dst: Path, size: int, mode: int, budget: int) -> int:
    """Copy the data extents of an open regular file (holes stay holes); returns bytes copied.
    Raises OverflowError when the data exceeds `budget`."""
    copied = 0
    out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode & 0o777)
    try:
        offset = 0
        while offset < size:
            try:
                start = os.lseek(src_fd, offset, os.SEEK_DATA)
            except OSError:  # ENXIO: only a hole is left
                break
            end = os.lseek(src_fd, start, os.SEEK_HOLE)
            while start < end:
                data = os.pread(src_fd, min(CHUNK, end - start), start)
                if not data:
                    break
                copied += len(data)
                if copied > budget:
                    raise OverflowError
                os.pwrite(out, data, start)
                start += len(data)
            offset = end
        os.ftruncate(out, size)
    finally:
        os.close(out)
    return copied


def _open_regular(path: Path) -> tuple[int, os.stat_result] | None:
    """An fd on `path` if it is a regular file (no link followed, no FIFO waited on), else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        return None
    return fd, st


def _is_whiteout(st: os.stat_result) -> bool:
    """An overlayfs whiteout (a deleted lower file): a character device 0:0."""
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


OPAQUE = "trusted.overlay.opaque"
"""The xattr overlayfs sets on a folder of the writable layer that hides the lower layers' one."""


def _copy_dir_marks(src: str, dst: Path, st: os.stat_result) -> None:
    """A layer folder's mode and its opaque mark. The mode keeps its sticky and read/execute bits; it
    loses setuid/setgid and write for group and others (the copy is root's, on the host), and its
    owner (the uid of whatever runs on the layer) may always enter, list and write it: an agent's
    `chmod 000 /app` must not stop the verifier's sandbox from starting in it."""
    os.chmod(dst, (st.st_mode & 0o1755) | 0o700)
    with contextlib.suppress(OSError):
        if os.getxattr(src, OPAQUE, follow_symlinks=False) == b"y":
            os.setxattr(dst, OPAQUE, b"y", follow_symlinks=False)


def _copy_regular(src: Path, dst: Path, name: str, report: TreeReport, max_bytes: int) -> None:
    """One regular file of `copy_untrusted`, counted in `report` against `max_bytes`."""
    opened = _open_regular(src)
    if opened is None:
        report.skip(name, "could not be opened as a regular file")
        return
    fd, fst = opened
    try:
        report.bytes += _copy_file(fd, dst, fst.st_size, fst.st_mode, max_bytes - report.bytes)
    except OverflowError:
        report.truncated = f"more than {max_bytes} bytes of data"
    finally:
        os.close(fd)


def copy_untrusted(
    src: Path, dst: Path, *, max_files: int, max_bytes: int, layer: bool = False
) -> TreeReport:
    """Copy the tree `src` to the new folder `dst` by the rules above; stop at the caps.

    `layer`: `src` is an overlay's writable layer (`overlay.py`), to be stacked over its image again
    and only ever seen inside a sandbox: links are kept whatever their target (inside a sandbox
    they resolve in its own root; nothing here follows them), folders keep their mode (with the
    owner's rwx: `_copy_dir_marks`) and opaque mark, whiteouts stay whiteouts. FIFOs, sockets and
    other devices are still left out."""
    report = TreeReport()
    dst.mkdir(parents=True)

    def walk(folder: Path, out: Path, rel: str, depth: int) -> None:
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as e:
            report.skip(rel or ".", f"unreadable folder ({e.strerror})")
            return
        for entry in entries:
            if report.truncated:
                return
            name = f"{rel}/{entry.name}" if rel else entry.name
            report.files += 1
            if report.files > max_files:
                report.truncated = f"more than {max_files} files"
                return
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(entry.path)
                if layer or link_stays_inside(rel, target):
                    os.symlink(target, out / entry.name)
                else:
                    report.skip(name, f"link to {target!r} leaves the workspace")
            elif stat.S_ISDIR(st.st_mode):
                if depth >= MAX_DEPTH:
                    report.skip(name, f"deeper than {MAX_DEPTH} folders")
                    continue
                (out / entry.name).mkdir(mode=0o755)
                if layer:
                    _copy_dir_marks(entry.path, out / entry.name, st)
                walk(Path(entry.path), out / entry.name, name, depth + 1)
            elif stat.S_ISREG(st.st_mode):
                _copy_regular(Path(entry.path), out / entry.name, name, report, max_bytes)
            elif layer and _is_whiteout(st):
                os.mknod(out / entry.name, stat.S_IFCHR, os.makedev(0, 0))
            else:
                report.skip(name, "not a regular file, folder or link")

    walk(src, dst, "", 0)
    return report


def sanitize_tree(root: Path, *, max_files: int) -> TreeReport:
    """In place: remove links that leave `root`, everything that is not a regular file, folder or
    link, and folders deeper than MAX_DEPTH (as `copy_untrusted` leaves them out); clear setuid and
    setgid bits (`copy_untrusted` keeps neither); count files and
    data bytes. The walk stops at `max_files`, or at a folder it cannot read (`truncated` says why:
    what lies past it was never cleaned)."""
    report = TreeReport()
    for rel, depth, entries in walk(root):
        if entries is None:
            report.truncated = f"folder {rel or '.'!r} could not be read"
            return report
        for entry in list(entries):
            relname = f"{rel}/{entry.name}" if rel else entry.name
            if depth >= MAX_DEPTH and entry.is_dir(follow_symlinks=False):
                remove_tree(Path(entry.path))
                entries.remove(entry)
                report.skip(relname, f"deeper than {MAX_DEPTH} folders: removed")
                continue
            report.files += 1
            if report.files > max_files:
                report.truncated = f"more than {max_files} files"
                return report
            with contextlib.suppress(FileNotFoundError):
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    target = os.readlink(entry.path)
                    if not link_stays_inside(rel, target):
                        os.unlink(entry.path)
                        report.skip(relname, f"link to {target!r} leaves the workspace: removed")
                elif stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
                    report.bytes += st.st_blocks * 512 if stat.S_ISREG(st.st_mode) else 0
                    if st.st_mode & (stat.S_ISUID | stat.S_ISGID):
                        _drop_setid(entry.path)
                else:
                    os.unlink(entry.path)
                    report.skip(relname, "not a regular file, folder or link: removed")
    return report


def _drop_setid(path: str) -> None:
    """Clear the setuid and setgid bits of the file or folder `path` (opened without following a
    link): a bound workspace keeps the sandbox's host uid as owner, and a setuid copy of a shell left
    in the host's run folder would let anyone who can reach it act as that uid, which later
    sandboxes lease again."""
    fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)  # whatever its read permission
    try:
        st = os.fstat(fd)
        if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
            os.chmod(f"/proc/self/fd/{fd}", stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
    finally:
        os.close(fd)


def read_bounded(path: Path, limit: int) -> bytes | None:
    """At most `limit` bytes of the regular file `path` (no link followed); None for anything else."""
    opened = _open_regular(path)
    if opened is None:
        return None
    fd, _ = opened
    try:
        return os.pread(fd, limit, 0)
    finally:
        os.close(fd)
