"""ClawGym JSONL layout (`syn_task.jsonl`): one task per line.

Per line: `prompt` (required), `hook_code` (e.g. `python3 reward/test.py /root/.openclaw/workspace`),
`hook_lang`, `input_files` = `[{file_path, file_format, content}]`, optional `rules`/`rule`,
`category`, `macro_category`, `action`, `origin_template` (front matter whose `id:` line is the id).

- `input_files` under `reward/` go to the checker; the entry is the `.py` file `hook_code` names
  (default: the first `reward/*.py`). The rest form the workspace. A `file_path` starting with the
  original mount dir (`/root/.openclaw/workspace/`) has that prefix stripped; any other absolute or
  escaping path rejects the line.
- Task id: the `id:` line of `origin_template`'s front matter, else `<file name>:<line>`.
- Split: the name of the folder holding the file (as for the folder layout).
- Grading: `grading_type` if given, else automated with a checker, hybrid with checker and rules,
  llm_judge with rules only. Non-string `content` is written as JSON text; binary files are not
  supported by this layout (the published sets hold text only).
- Checker `.py` files are compiled at load time; a syntax error rejects the line, naming the checker
  file and its line (`syntax error in checker reward/test.py:3: ...`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harnessrl.formats import untrusted_json
from harnessrl.tasks.clawgym_folder import DEFAULT_MOUNT, entry_from_command, graded, json_problem
from harnessrl.tasks.rubric import rules_from_clawgym
from harnessrl.tasks.syntax import first_syntax_error
from harnessrl.types import Checker, Task, TaskError, TaskFile, safe_relpath

_FRONT_ID = re.compile(r"^id:\s*['\"]?(?P<id>[^'\"\n]+?)['\"]?\s*$", re.MULTILINE)


def template_id(template: Any) -> str | None:
    """The `id:` value of a front-matter block (`---\\nid: x\\n---`), or None."""
    if not isinstance(template, str):
        return None
    text = template.lstrip()
    if text.startswith("---"):
        end = text.find("\n---", 3)
        text = text[3:end] if end != -1 else text[3:]
    m = _FRONT_ID.search(text)
    return m.group("id").strip() if m else None


def _split_files(items: Any, mount: str, where: str, line: int) -> tuple[list[TaskFile], list[TaskFile]]:
    if items is None:
        return [], []
    if not isinstance(items, list):
        raise TaskError("`input_files` must be a list", where, line)
    workspace: list[TaskFile] = []
    reward: list[TaskFile] = []
    prefix = mount.rstrip("/") + "/"
    for i, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("file_path"), str):
            raise TaskError(f"input_files[{i}] needs a string `file_path`", where, line)
        raw = item["file_path"]
        raw = raw[len(prefix) :] if raw.startswith(prefix) else raw
        try:
            path = safe_relpath(raw)
        except ValueError as e:
            raise TaskError(f"input_files[{i}]: {e}", where, line) from None
        content = item.get("content", "")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        f = TaskFile(path=path, content=text)
        (reward if path.startswith("reward/") else workspace).append(f)
    return workspace, reward


def _checker(
    obj: dict[str, Any], reward: list[TaskFile], mount: str, where: str, line: int
) -> Checker | None:
    hook = obj.get("hook_code")
    entry = entry_from_command(hook, mount, where, line) if isinstance(hook, str) else None
    if entry is None:
        if not reward:
            return None
        candidates = [f.path for f in reward if f.path.endswith(".py")]
        if not candidates:
            raise TaskError("reward files hold no python checker", where, line)
        entry = candidates[0]
    if entry not in {f.path for f in reward}:
        raise TaskError(f"checker {entry!r} (hook_code) is not among the reward/ files", where, line)
    return Checker(files=reward, entry=entry, command=hook if isinstance(hook, str) else None)


def parse_line(obj: Any, path: Path, line: int, split: str) -> Task:
    """One JSONL record -> Task. Raises TaskError with the file and line."""
    where = str(path)
    if not isinstance(obj, dict):
        raise TaskError("line is not a JSON object", where, line)
    prompt = obj.get("prompt")
    if "prompt" not in obj:
        raise TaskError("missing `prompt`", where, line)
    if not isinstance(prompt, str):
        kind = "null" if prompt is None else type(prompt).__name__
        raise TaskError(f"`prompt` must be a string, not {kind}", where, line)
    if not prompt.strip():
        raise TaskError("`prompt` is empty", where, line)
    mount = str(obj.get("input_mount_dir") or DEFAULT_MOUNT)
    workspace, reward = _split_files(obj.get("input_files"), mount, where, line)
    checker = _checker(obj, reward, mount, where, line)
    problem = first_syntax_error(reward) if checker is not None else None
    if problem is not None:
        at = f"{problem.file.path}:{problem.line}" if problem.line else problem.file.path
        raise TaskError(f"syntax error in checker {at}: {problem.message}", where, line)
    rubric = rules_from_clawgym(obj.get("rules") or obj.get("rule"), where, line)
    grading = obj.get("grading_type")
    if grading is None:
        grading = ("hybrid" if rubric else "automated") if checker else "llm_judge"
    fields = graded(split, obj.get("category"), str(grading), (checker, rubric), where, line)
    known = {"prompt", "input_files", "rules", "rule", "grading_type", "category", "input_mount_dir"}
    return Task(
        id=template_id(obj.get("origin_template")) or f"{path.name}:{line}",
        prompt=prompt,
        workspace=workspace,
        **fields,
        input_mount_dir=mount,
        source=f"{path}:{line}",
        metadata={k: v for k, v in obj.items() if k not in known},
    )


def load_jsonl(path: Path) -> tuple[list[Task], list[TaskError]]:
    """Load every line of a JSONL task file; bad lines are rejected with file and line, not raised."""
    tasks: list[Task] = []
    rejected: list[TaskError] = []
    split = path.parent.name
    with path.open(encoding="utf-8", errors="replace") as fh:
        for line_no, text in enumerate(fh, start=1):
            if not text.strip():
                continue
            try:
                try:
                    obj = untrusted_json.loads(text, "line")
                except untrusted_json.UntrustedJSONError as e:
                    raise TaskError(json_problem(e), str(path), line_no) from None
                tasks.append(parse_line(obj, path, line_no, split))
            except TaskError as e:
                rejected.append(e)
            except ValidationError as e:
                rejected.append(TaskError(f"invalid task: {e}", str(path), line_no))
    return tasks, rejected
