"""Walking a folder of task folders (a ClawGym split, a Harbor dataset): which sub-folders are tasks'
and how their loads are sorted into tasks and rejects."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from harnessrl.types import Task, TaskError

Loads = tuple[list[Task], list[TaskError]]
"""Tasks loaded, and the rejects."""


def task_folders(path: Path) -> Iterator[Path]:
    """The sub-folders of `path` in name order, hidden folders and `__pycache__` skipped; links are
    kept, so that the loader rejects them by name rather than skipping them silently."""
    for child in sorted(path.iterdir()):
        if child.name.startswith((".", "__")) or not (child.is_dir() or child.is_symlink()):
            continue
        yield child


def sort_loads(results: Iterable[Task | TaskError]) -> Loads:
    """Loaded tasks and rejects, each in the order given."""
    tasks: list[Task] = []
    rejected: list[TaskError] = []
    for result in results:
        if isinstance(result, Task):
            tasks.append(result)
        else:
            rejected.append(result)
    return tasks, rejected


def load_each(
    path: Path, load: Callable[[Path, str], Task | TaskError]
) -> tuple[list[Task], list[TaskError]]:
    """`load(folder, split)` for every task folder of `path`, the split being `path`'s name."""
    return sort_loads(load(child, path.name) for child in task_folders(path))


def try_load(
    load: Callable[[Path, str], Task], task_dir: Path, split: str, unreadable: tuple[type[Exception], ...]
) -> Task | TaskError:
    """`load(task_dir, split)` with every failure as a TaskError: a link, the TaskError it raises, or
    one of the `unreadable` exceptions (bad JSON or TOML, an unreadable file, an invalid value)."""
    try:
        if task_dir.is_symlink():
            raise TaskError("symlinks are not allowed in task folders", str(task_dir))
        return load(task_dir, split)
    except TaskError as e:
        return e
    except unreadable as e:
        return TaskError(f"unreadable task: {e}", str(task_dir))
