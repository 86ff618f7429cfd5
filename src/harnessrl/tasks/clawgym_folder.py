"""ClawGym folder layout: `<split>/task_XXXX/{data_entry.json, input_files/, reward/, reference/}`.

- `data_entry.json`: `task_id`, `user_query`, `metadata` (`category`, `grading_type`, optional
  `rule`/`rules`), `input_mount_dir`. Other keys are kept in `Task.metadata`.
- `input_files/` -> `Task.workspace` (copied verbatim later, executable bit kept).
- `input_mount_dir` may be the workspace root `/root/.openclaw/workspace` (the usual case) or, as
  upstream allows, a folder under it (`/root/.openclaw/workspace/input`): the agent and the checker
  still work at the root (`reward.sh` passes the root), and the input files sit in that sub-folder.
  The loader says so literally: `Task.input_mount_dir` is the root and every workspace path gets the
  sub-folder as prefix (`input/data.csv`); the original value stays in `metadata["input_mount_dir"]`.
- `reward/*` -> `Task.checker.files`; the entry is the `.py` file `reward.sh` runs (default
  `reward/check.py`); `Checker.command` is the `reward.sh` text. When `reward.sh` is ClawGym's
  canonical wrapper (`reward_sh.is_canonical_wrapper`) it is only reference; any other `reward.sh`
  is the task's real entry point and `Checker.shell_entry` is set to `reward/reward.sh`.
- Every `.py` checker file is compiled at load time: a syntax error rejects the task at its file:line.
- `reference/solve.sh` (our convention, bundled and generated sets) -> `Task.reference`: a bash script
  run with the workspace as cwd that must make the checker reach 1.0; `reference/wrong.sh` ->
  `Task.wrong_reference`, a plausible wrong solution that must lose a metric. Other files under
  `reference/` are ignored. A solve.sh whose second line is `STEPS_MARK` is several steps: each
  later line one complete command, which the scripted reference engines send one per model call.

Neither `reward/` nor `reference/` is ever part of the workspace. Symlinks anywhere are rejected.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import ValidationError

from harnessrl.formats import untrusted_json
from harnessrl.tasks.files import scan_dir
from harnessrl.tasks.folders import load_each, try_load
from harnessrl.tasks.reward_sh import is_canonical_wrapper
from harnessrl.tasks.rubric import rules_from_clawgym
from harnessrl.tasks.syntax import first_syntax_error
from harnessrl.types import Checker, RubricRule, Task, TaskError, TaskFile, safe_relpath

GRADING_TYPES = ("automated", "llm_judge", "hybrid")
DEFAULT_MOUNT = "/root/.openclaw/workspace"
STEPS_MARK = "# harnessrl: one step per line"
"""Second line of a `reference/solve.sh` made of steps (module docstring; read by
`rollout.session.reference_steps`)."""


def require_graders(grading: str, has_checker: bool, has_rubric: bool, where: str, line: int | None) -> None:
    """Raise TaskError unless the task has what its grading type needs (a checker and/or rubric rules)."""
    if grading not in GRADING_TYPES:
        raise TaskError(f"unknown grading_type {grading!r} (expected one of {GRADING_TYPES})", where, line)
    if grading in ("automated", "hybrid") and not has_checker:
        raise TaskError(f"grading_type {grading} needs a code checker", where, line)
    if grading in ("llm_judge", "hybrid") and not has_rubric:
        raise TaskError(f"grading_type {grading} needs rubric rules", where, line)


class Graded(TypedDict):
    """The fields of a `Task` that every ClawGym-shaped loader (folder, JSONL, PinchBench) fills alike."""

    split: str
    category: str
    grading_type: Literal["automated", "llm_judge", "hybrid"]
    checker: Checker | None
    rubric: list[RubricRule]


def graded(
    split: str,
    category: Any,
    grading: Any,
    graders: tuple[Checker | None, list[RubricRule]],
    where: str,
    line: int | None,
) -> Graded:
    """Those fields (a missing category is ""), once `require_graders` has checked the grading type
    against the graders `(checker, rubric)` the task has."""
    checker, rubric = graders
    require_graders(grading, checker is not None, bool(rubric), where, line)
    return Graded(
        split=split, category=str(category or ""), grading_type=grading, checker=checker, rubric=rubric
    )


def is_task_dir(path: Path) -> bool:
    """A folder that looks like one ClawGym task (used by layout detection)."""
    return path.is_dir() and any((path / n).exists() for n in ("data_entry.json", "input_files", "reward"))


def split_mount(mount_dir: str) -> tuple[str, str]:
    """-> (workspace root, sub-folder of it holding the input files; "" for the root itself)."""
    mount = mount_dir.rstrip("/") or "/"
    if mount.startswith(DEFAULT_MOUNT + "/"):
        return DEFAULT_MOUNT, safe_relpath(mount[len(DEFAULT_MOUNT) + 1 :])
    return mount, ""


def _line_with(text: str, needle: str) -> int | None:
    return next((i for i, line in enumerate(text.splitlines(), start=1) if needle in line), None)


def entry_from_command(command: str, mount_dir: str, where: str, line: int | None = None) -> str | None:
    """The task-relative `.py` path a hook command runs (`python3 <mount>/reward/check.py ...`), or None.

    The prefix the original runs used (`mount_dir`, or the workspace root `/root/.openclaw/workspace`
    that holds `reward/` when the mount dir is a folder under it) is stripped; anything still absolute
    or escaping the task is a TaskError ("checker path outside the task") at `line`, or, when `line`
    is None, at the line of `command` that names it.
    """
    try:
        tokens = shlex.split(command, comments=True)
    except ValueError:
        tokens = command.split()
    scripts = [t for t in tokens if t.endswith(".py")]
    if not scripts:
        return None
    raw = scripts[0]
    for root in sorted({mount_dir.rstrip("/"), DEFAULT_MOUNT}, key=len, reverse=True):
        if raw.startswith(root + "/"):
            raw = raw[len(root) + 1 :]
            break
    try:
        return safe_relpath(raw)
    except ValueError:
        at = line if line is not None else _line_with(command, scripts[0])
        raise TaskError(f"checker path {scripts[0]!r} is outside the task", where, at) from None


def json_problem(e: untrusted_json.UntrustedJSONError) -> str:
    """A task file's JSON problem as the loaders word it: the parser's message for a syntax error,
    else the limit it broke (a dataset file nested 5,000 deep is a rejected task, not a crash)."""
    return f"not valid JSON: {e.msg}" if e.msg is not None else f"JSON {e.reason}"


def _read_entry(task_dir: Path) -> dict[str, Any]:
    path = task_dir / "data_entry.json"
    if path.is_symlink() or not path.is_file():
        raise TaskError("missing data_entry.json", str(path))
    try:
        data = untrusted_json.loads(path.read_text(encoding="utf-8"), "data_entry.json")
    except untrusted_json.UntrustedJSONError as e:
        raise TaskError(json_problem(e), str(path), e.lineno) from None
    except UnicodeDecodeError:
        raise TaskError("not UTF-8 text", str(path)) from None
    if not isinstance(data, dict):
        raise TaskError("data_entry.json must hold a JSON object", str(path), 1)
    query = data.get("user_query")
    if "user_query" not in data:
        raise TaskError("missing `user_query`", str(path))
    line = _line_with(path.read_text(encoding="utf-8"), '"user_query"')
    if not isinstance(query, str):
        kind = "null" if query is None else type(query).__name__
        raise TaskError(f"`user_query` must be a string, not {kind}", str(path), line)
    if not query.strip():
        raise TaskError("`user_query` is empty", str(path), line)
    return data


def _checker(task_dir: Path, mount_dir: str) -> Checker | None:
    reward = task_dir / "reward"
    if not reward.exists() and not reward.is_symlink():
        return None
    files = scan_dir(reward, prefix="reward/")
    sh = reward / "reward.sh"
    command = sh.read_bytes().decode("utf-8") if sh.is_file() else None  # bash splits at \n only
    where = str(sh if command is not None else reward)
    named = entry_from_command(command, mount_dir, where) if command else None
    entry = named or "reward/check.py"
    paths = {f.path for f in files}
    shell = "reward/reward.sh" if command is not None and not is_canonical_wrapper(command) else None
    if entry not in paths:
        if shell is None or named is not None:
            raise TaskError(f"checker entry {entry!r} is not among the task's reward files", where)
        entry = shell  # a custom reward.sh that runs no python checker of ours
    problem = first_syntax_error(files)
    if problem is not None:
        raise TaskError(f"syntax error in checker: {problem.message}", str(problem.file.source), problem.line)
    return Checker(files=files, entry=entry, command=command, shell_entry=shell)


def _reference(task_dir: Path, name: str) -> TaskFile | None:
    ref = task_dir / "reference"
    if not ref.exists() and not ref.is_symlink():
        return None
    return next((f for f in scan_dir(ref, prefix="reference/") if f.path == f"reference/{name}"), None)


def load_task_dir(task_dir: Path, split: str) -> Task:
    """Load one task folder. Raises TaskError naming the file (and line) of the first problem."""
    data = _read_entry(task_dir)
    entry_path = str(task_dir / "data_entry.json")
    meta = data.get("metadata") or {}
    if not isinstance(meta, dict):
        raise TaskError("`metadata` must be an object", entry_path)
    grading = meta.get("grading_type") or data.get("grading_type") or "automated"
    mount = str(data.get("input_mount_dir") or DEFAULT_MOUNT)
    try:
        root, sub = split_mount(mount)
    except ValueError as e:
        raise TaskError(f"`input_mount_dir`: {e}", entry_path) from None
    inputs = task_dir / "input_files"
    prefix = f"{sub}/" if sub else ""
    workspace = scan_dir(inputs, prefix=prefix) if inputs.exists() or inputs.is_symlink() else []
    rubric = rules_from_clawgym(
        meta.get("rules") or meta.get("rule") or data.get("rules") or data.get("rule"), entry_path
    )
    checker = _checker(task_dir, mount)
    fields = graded(split, meta.get("category"), grading, (checker, rubric), entry_path, None)
    known = {"task_id", "user_query", "metadata", "input_mount_dir", "rules", "rule", "grading_type"}
    extra = {k: v for k, v in meta.items() if k not in {"category", "grading_type", "rule", "rules"}}
    extra.update({k: v for k, v in data.items() if k not in known})
    if sub:
        extra["input_mount_dir"] = mount
    return Task(
        id=str(data.get("task_id") or task_dir.name),
        prompt=data["user_query"],
        workspace=workspace,
        **fields,
        input_mount_dir=root,
        reference=_reference(task_dir, "solve.sh"),
        wrong_reference=_reference(task_dir, "wrong.sh"),
        source=str(task_dir),
        metadata=extra,
    )


def load_split_dir(split_dir: Path) -> tuple[list[Task], list[TaskError]]:
    """Every sub-folder of a split folder is one task (hidden folders and `__pycache__` skipped)."""
    return load_each(split_dir, try_load_task_dir)


def try_load_task_dir(task_dir: Path, split: str) -> Task | TaskError:
    """`load_task_dir`, with every failure (bad JSON, unreadable file, invalid value) as a TaskError."""
    return try_load(load_task_dir, task_dir, split, (ValidationError, OSError, UnicodeDecodeError))
