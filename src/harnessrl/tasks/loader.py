"""`load_tasks(path)`: detect a task set's layout and load it into Tasks, collecting rejects.

Layouts, tried in this order for a folder:
1. one ClawGym task folder (holds `data_entry.json`): split = its parent folder's name;
2. a ClawGym split folder (a sub-folder looks like a task): split = the folder's name;
3. a root of split folders (a sub-folder is a split folder): split = each sub-folder's name;
4. otherwise every `*.jsonl` file in it and every PinchBench `.md` task under it.
A file is loaded as JSONL (`.jsonl`) or as one PinchBench task (`.md`). `"bundled"` is the sample set
shipped inside the package (`harnessrl/tasks/bundled/`).

Bad tasks never abort the load: each becomes a TaskError (file and line) in `rejected`. Duplicate
task ids are rejected too (the first one wins), since ids key rewards and reports.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harnessrl.tasks.clawgym_folder import is_task_dir, load_split_dir, try_load_task_dir
from harnessrl.tasks.clawgym_jsonl import load_jsonl
from harnessrl.tasks.config import TasksConfig
from harnessrl.tasks.pinchbench import load_markdown_dir, try_load_markdown
from harnessrl.types import Task, TaskError

BUNDLED = "bundled"


@dataclass
class TaskSetLoad:
    """The outcome of loading a task set: good tasks, and why each bad one was rejected."""

    tasks: list[Task] = field(default_factory=list)
    rejected: list[TaskError] = field(default_factory=list)

    def extend(self, tasks: list[Task], rejected: list[TaskError]) -> None:
        self.tasks.extend(tasks)
        self.rejected.extend(rejected)


def bundled_path() -> Path:
    """The folder of the bundled sample task set inside the installed package."""
    return Path(__file__).resolve().parent / "bundled"


def _subdirs(path: Path) -> list[Path]:
    return sorted(
        c for c in path.iterdir() if c.is_dir() and not c.is_symlink() and not c.name.startswith((".", "__"))
    )


def _is_split_dir(path: Path) -> bool:
    return any(is_task_dir(c) for c in _subdirs(path))


def _load_dir(path: Path, out: TaskSetLoad) -> None:
    if (path / "data_entry.json").exists():
        result = try_load_task_dir(path, path.resolve().parent.name)
        if isinstance(result, Task):
            out.tasks.append(result)
        else:
            out.rejected.append(result)
        return
    if _is_split_dir(path):
        out.extend(*load_split_dir(path))
        return
    splits = [c for c in _subdirs(path) if _is_split_dir(c)]
    if splits:
        for split_dir in splits:
            out.extend(*load_split_dir(split_dir))
        return
    for jsonl in sorted(path.glob("*.jsonl")):
        out.extend(*load_jsonl(jsonl))
    out.extend(*load_markdown_dir(path))


def _drop_duplicates(load: TaskSetLoad) -> None:
    seen: set[str] = set()
    kept: list[Task] = []
    for task in load.tasks:
        if task.id in seen:
            load.rejected.append(TaskError(f"duplicate task id {task.id!r}", task.source))
            continue
        seen.add(task.id)
        kept.append(task)
    load.tasks = kept


def load_tasks(path: str | Path, split: str | None = None) -> TaskSetLoad:
    """Load a task set (layout auto-detected); keep only `split` when given.

    Raises TaskError only when `path` itself does not exist or is of an unknown kind; problems inside
    the set are returned in `TaskSetLoad.rejected`.
    """
    root = bundled_path() if str(path) == BUNDLED else Path(path)
    if not root.exists():
        raise TaskError("task set not found", str(root))
    out = TaskSetLoad()
    if root.is_dir():
        _load_dir(root, out)
    elif root.suffix == ".jsonl":
        out.extend(*load_jsonl(root))
    elif root.suffix == ".md":
        result = try_load_markdown(root)
        if isinstance(result, Task):
            out.tasks.append(result)
        else:
            out.rejected.append(result)
    else:
        raise TaskError("not a task set (expected a folder, a .jsonl file or a .md task)", str(root))
    _drop_duplicates(out)
    if split is not None:
        out.tasks = [t for t in out.tasks if t.split == split]
    return out


def load_configured(cfg: TasksConfig) -> TaskSetLoad:
    """`load_tasks(cfg.path, cfg.split)`, then the first `cfg.limit` tasks (in load order) if set."""
    load = load_tasks(cfg.path, split=cfg.split)
    if cfg.limit is not None:
        load.tasks = load.tasks[: cfg.limit]
    return load
