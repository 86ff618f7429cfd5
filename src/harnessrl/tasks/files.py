"""Task files on disk: scanning input folders into TaskFiles, and writing TaskFiles back out.

Both directions re-validate every path: a file may never land outside its destination (no `..`, no
absolute path, no symlink on the way), and symlinks inside input folders are rejected outright rather
than followed (a link could expose checker files or host paths to the agent). File bytes are copied
verbatim; only the executable bit of the mode is kept (owners, times and other bits are not).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from harnessrl.types import Task, TaskError, TaskFile, safe_relpath


def scan_dir(root: Path, prefix: str = "") -> list[TaskFile]:
    """Every regular file under `root` as a TaskFile with a `source` (sorted by path).

    `prefix` is prepended to each relative path (e.g. `reward/`). Raises TaskError naming the first
    symlink or special file found; nothing is read beyond the directory listing and file modes.
    """
    if root.is_symlink():
        raise TaskError("symlinks are not allowed in task folders", str(root))
    files: list[TaskFile] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(dirpath)
        for name in sorted(dirnames + filenames):
            path = here / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise TaskError("symlinks are not allowed in task folders", str(path))
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise TaskError("only regular files are allowed in task folders", str(path))
            rel = prefix + path.relative_to(root).as_posix()
            files.append(TaskFile(path=rel, source=path, executable=bool(mode & stat.S_IXUSR)))
    return sorted(files, key=lambda f: f.path)


def _target(dest: Path, rel: str, where: str) -> Path:
    """Resolve `dest/rel`, refusing anything that leaves `dest` or passes through a symlink."""
    try:
        norm = safe_relpath(rel)
    except ValueError as e:
        raise TaskError(str(e), where) from None
    root = dest.resolve()
    target = root / norm
    node = root
    for part in Path(norm).parts[:-1]:
        node = node / part
        if node.is_symlink():
            raise TaskError(f"{rel!r} passes through a symlink in the destination", where)
    if target.is_symlink() or not target.resolve().is_relative_to(root):
        raise TaskError(f"{rel!r} would land outside {dest}", where)
    return target


def write_files(files: list[TaskFile], dest: Path, where: str = "") -> list[Path]:
    """Write TaskFiles under `dest` (created if needed); return the written paths in order."""
    dest.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for f in files:
        target = _target(dest, f.path, where or f.path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if f.source is not None:
            if f.source.is_symlink() or not f.source.is_file():
                raise TaskError("source is a symlink or not a regular file", str(f.source))
            shutil.copyfile(f.source, target, follow_symlinks=False)
        else:
            target.write_text(f.content or "", encoding="utf-8")
        mode = 0o755 if f.executable else 0o644
        target.chmod(mode)
        written.append(target)
    return written


def materialize_workspace(task: Task, dest: Path) -> list[Path]:
    """Write the task's initial workspace into `dest` (checker and reference files are never included)."""
    return write_files(task.workspace, dest, task.source or task.id)


def materialize_checker(task: Task, dest: Path) -> list[Path]:
    """Write the task's checker files (paths like `reward/check.py`) into `dest`."""
    if task.checker is None:
        return []
    return write_files(task.checker.files, dest, task.source or task.id)
