"""`load_tasks(path)`: detect a task set's layout and load it into Tasks, collecting rejects.

Layouts, tried in this order for a folder (`fmt="auto"`; a named format tries only its own):
1. Harbor (`tasks/harbor.py`): one task folder (holds `task.toml`), a dataset folder of them, or a
   root of datasets: split = the dataset folder's name (a lone task: its parent's);
2. one ClawGym task folder (holds `data_entry.json`): split = its parent folder's name;
3. a ClawGym split folder (a sub-folder looks like a task): split = the folder's name;
4. a root of split folders (a sub-folder is a split folder): split = each sub-folder's name;
5. otherwise every `*.jsonl` file in it and every PinchBench `.md` task under it.
A file is loaded as JSONL (`.jsonl`) or as one PinchBench task (`.md`). `"bundled"` is the sample set
shipped inside the package (`harnessrl/tasks/bundled/`). A folder in which no task of any format
(or of the one named) is found is a TaskError naming the formats looked for and what it holds.

Bad tasks never abort the load: each becomes a TaskError (file and line) in `rejected`. Duplicate
task ids are rejected too (the first one wins), since ids key rewards and reports.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from harnessrl.tasks.clawgym_folder import is_task_dir, load_split_dir, try_load_task_dir
from harnessrl.tasks.clawgym_jsonl import load_jsonl
from harnessrl.tasks.config import TaskFormat, TasksConfig
from harnessrl.tasks.folders import Loads
from harnessrl.tasks.harbor import (
    is_harbor_dataset,
    is_harbor_task,
    load_harbor_dataset,
    try_load_harbor_task,
)
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


LOOKED_FOR: dict[str, str] = {
    "harbor": "Harbor tasks (a folder with task.toml, or a dataset of them)",
    "clawgym": "ClawGym tasks (data_entry.json, input_files/, reward/; a task, a split or a root of splits)",
    "jsonl": "ClawGym *.jsonl files",
    "pinchbench": "PinchBench *.md tasks",
}


def _add(out: TaskSetLoad, result: Task | TaskError) -> None:
    (out.tasks if isinstance(result, Task) else out.rejected).append(result)  # type: ignore[arg-type]


def _is_clawgym_task(path: Path) -> bool:
    return (path / "data_entry.json").exists()


Layout = tuple[Callable[[Path, str], Task | TaskError], Callable[[Path], bool], Callable[[Path], Loads]]
"""A folder layout: load one task (folder, split), is this a set of tasks, load a set."""


def _load_layout(path: Path, out: TaskSetLoad, is_task: Callable[[Path], bool], layout: Layout) -> bool:
    """`path` as one task, or a set of tasks, or a folder of sets, of one layout; False if none."""
    load_task, is_set, load_set = layout
    if is_task(path):
        _add(out, load_task(path, path.resolve().parent.name))
        return True
    sets = [path] if is_set(path) else [c for c in _subdirs(path) if is_set(c)]
    for folder in sets:
        out.extend(*load_set(folder))
    return bool(sets)


def _load_harbor(path: Path, out: TaskSetLoad) -> bool:
    return _load_layout(
        path, out, is_harbor_task, (try_load_harbor_task, is_harbor_dataset, load_harbor_dataset)
    )


def _load_clawgym(path: Path, out: TaskSetLoad) -> bool:
    return _load_layout(path, out, _is_clawgym_task, (try_load_task_dir, _is_split_dir, load_split_dir))


def _load_dir(path: Path, out: TaskSetLoad, fmt: TaskFormat) -> None:
    if fmt in ("auto", "harbor") and (_load_harbor(path, out) or fmt == "harbor"):
        return
    if fmt in ("auto", "clawgym") and (_load_clawgym(path, out) or fmt == "clawgym"):
        return
    if fmt in ("auto", "jsonl"):
        for jsonl in sorted(path.glob("*.jsonl")):
            out.extend(*load_jsonl(jsonl))
    if fmt in ("auto", "pinchbench"):
        out.extend(*load_markdown_dir(path))


def _nothing_found(root: Path, fmt: TaskFormat) -> TaskError:
    """The error for a folder in which no task was found: what was looked for, what is there."""
    entries = sorted(root.iterdir(), key=lambda p: p.name)
    names = [p.name + ("/" if p.is_dir() and not p.is_symlink() else "") for p in entries[:12]]
    more = f" and {len(entries) - 12} more" if len(entries) > 12 else ""
    holds = f"it holds {', '.join(names)}{more}" if entries else "it is empty"
    looked = [v for k, v in LOOKED_FOR.items() if fmt in ("auto", k)]
    return TaskError(f"no task found: looked for {'; '.join(looked)}; {holds}", str(root))


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


def load_tasks(path: str | Path, split: str | None = None, fmt: TaskFormat = "auto") -> TaskSetLoad:
    """Load a task set (layout auto-detected, or only format `fmt`); keep only `split` when given.

    Raises TaskError only when `path` itself does not exist, is of an unknown kind, or is a folder in
    which no task was found (`_nothing_found`); problems inside the set are returned in
    `TaskSetLoad.rejected`.
    """
    root = bundled_path() if str(path) == BUNDLED else Path(path)
    if not root.exists():
        raise TaskError("task set not found", str(root))
    out = TaskSetLoad()
    if root.is_dir():
        _load_dir(root, out, fmt)
        if not out.tasks and not out.rejected:
            raise _nothing_found(root, fmt)
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
    load = load_tasks(cfg.path, split=cfg.split, fmt=cfg.format)
    if cfg.limit is not None:
        load.tasks = load.tasks[: cfg.limit]
    return load
