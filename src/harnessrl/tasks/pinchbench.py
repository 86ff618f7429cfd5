"""PinchBench markdown tasks: YAML front matter plus `##` sections, one task per `.md` file.

Front matter: `id`, `name`, `category`, `grading_type` (automated | llm_judge | hybrid),
`timeout_seconds` (agent timeout), `workspace_files`, `grading_weights`. Sections: `## Prompt`
(required), `## Expected Behavior` and `## Grading Criteria` (kept in metadata), `## Automated Checks`
(the first fenced python block, defining `grade(transcript, workspace_path)`), `## LLM Judge Rubric`
(parsed by `rubric.rules_from_markdown`).

The python block becomes the checker file `reward/check.py` with a `main()` appended, so it also runs
as a plain process (`python3 check.py WORKSPACE` prints the dict as JSON, transcript empty).

`workspace_files` entries: `{source, dest}` copies a file (or folder); `{path|dest, content}` writes
inline text; a bare string copies that source to the same relative path. Other front-matter keys are
kept in `Task.metadata`. A `source` is looked up as upstream does first, in the `assets/` folder
beside the tasks folder (`<repo>/assets/<source>` for `<repo>/tasks/task_01.md`), then, for hand-made
sets, relative to the `.md` file's folder or one of its three nearest ancestors.

PinchBench's public task repository: `tasks/task_*.md` (24 tasks), `tasks/TASK_TEMPLATE.md` (a
template, front matter `id: task_XX_name`), `assets/` (the source files). Upstream loads only
`task_*.md`, so in a folder that holds any `task_*.md` file only those are tasks; in other folders
every `.md` file with front matter and an `id:` line is. Five of the 24 are `llm_judge` tasks (a
rubric, no code checker): they load, and need a judge to be scored.

The python block is compiled at load time: a syntax error rejects the task at its line in the `.md`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from harnessrl.tasks.clawgym_folder import graded
from harnessrl.tasks.files import scan_dir
from harnessrl.tasks.rubric import rules_from_markdown
from harnessrl.tasks.syntax import first_syntax_error
from harnessrl.types import Checker, Task, TaskError, TaskFile, safe_relpath

MAIN_WRAPPER = """

def main() -> None:  # added by harnessrl: run as `python3 check.py WORKSPACE`
    import json as _json
    import sys as _sys

    _ws = _sys.argv[1] if len(_sys.argv) > 1 else "."
    print(_json.dumps(grade([], _ws)))


if __name__ == "__main__":
    main()
"""

_FENCE = re.compile(r"```[ \t]*(?:python|py)[ \t]*\n(?P<code>.*?)\n[ \t]*```", re.DOTALL | re.IGNORECASE)


def looks_like_task(path: Path) -> bool:
    """A `.md` file that starts with front matter holding an `id:` line."""
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:4000]
    except OSError:
        return False
    return head.startswith("---") and re.search(r"^id:", head, re.MULTILINE) is not None


def split_front_matter(text: str, where: str) -> tuple[dict[str, Any], str, int]:
    """-> (front matter, body, line number of the body's first line)."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise TaskError("missing YAML front matter (`---` on the first line)", where, 1)
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise TaskError("front matter is not closed by `---`", where, 1)
    try:
        meta = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        line = mark.line + 2 if mark else 1  # +1: 0-based mark, +1: the opening `---` line
        raise TaskError(f"invalid YAML front matter: {problem}", where, line) from None
    if not isinstance(meta, dict):
        raise TaskError("front matter must be a mapping", where, 2)
    return meta, "\n".join(lines[end + 1 :]), end + 2


_RULE = re.compile(r"\n\s*(?:-{3,}|\*{3,}|_{3,})\s*$")


def _section_text(lines: list[str]) -> str:
    """The lines as text, without the `---` rule PinchBench puts before the next heading."""
    text = "\n".join(lines).strip()
    while (m := _RULE.search("\n" + text)) is not None:
        text = ("\n" + text)[: m.start()].strip()
    return text


def sections(body: str) -> dict[str, str]:
    """`## Title` -> text up to the next `## ` heading (deeper headings stay inside, closing rules go)."""
    out: dict[str, str] = {}
    title: str | None = None
    buf: list[str] = []
    for line in body.splitlines():
        if line.startswith("## "):
            if title is not None:
                out[title] = _section_text(buf)
            title, buf = line[3:].strip().lower(), []
        elif title is not None:
            buf.append(line)
    if title is not None:
        out[title] = _section_text(buf)
    return out


def _line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return i
    return 1


def _find_source(md: Path, source: str) -> Path | None:
    rel = safe_relpath(source)
    bases = [md.parent.parent / "assets", md.parent, *list(md.parent.parents)[:3]]
    for base in bases:
        candidate = base / rel
        if candidate.exists() or candidate.is_symlink():
            return candidate
    return None


def _workspace_entry(entry: Any, md: Path, text: str) -> list[TaskFile]:
    where = str(md)
    if isinstance(entry, str):
        entry = {"source": entry, "dest": entry}
    if not isinstance(entry, dict):
        raise TaskError(
            "workspace_files entries must be strings or mappings", where, _line_of(text, "workspace_files")
        )
    dest_raw = str(entry.get("dest") or entry.get("path") or entry.get("source") or "")
    line = _line_of(text, dest_raw) if dest_raw else _line_of(text, "workspace_files")
    try:
        dest = safe_relpath(dest_raw)
        if "content" in entry and "source" not in entry:
            return [TaskFile(path=dest, content=str(entry["content"]))]
        source = _find_source(md, str(entry.get("source") or ""))
    except ValueError as e:
        raise TaskError(f"workspace file: {e}", where, line) from None
    if source is None:
        raise TaskError(f"workspace source {entry.get('source')!r} not found", where, line)
    if source.is_symlink():
        raise TaskError("symlinks are not allowed in task folders", str(source))
    if source.is_dir():
        return scan_dir(source, prefix=dest + "/")
    return [TaskFile(path=dest, source=source, executable=source.stat().st_mode & 0o100 != 0)]


def _checker(secs: dict[str, str], md: Path, text: str) -> Checker | None:
    block = secs.get("automated checks")
    if not block:
        return None
    m = _FENCE.search(block)
    if m is None:
        raise TaskError(
            "`## Automated Checks` has no ```python block", str(md), _line_of(text, "## Automated Checks")
        )
    code = m.group("code").rstrip() + "\n"
    if "def main(" not in code:
        code += MAIN_WRAPPER
    files = [TaskFile(path="reward/check.py", content=code)]
    problem = first_syntax_error(files)
    if problem is not None:
        first = text.count("\n", 0, text.find(m.group(0))) + 2  # the line after the opening fence
        line = first + problem.line - 1 if problem.line else first
        raise TaskError(f"syntax error in `## Automated Checks`: {problem.message}", str(md), line)
    return Checker(files=files, entry="reward/check.py")


def load_markdown(md: Path, split: str = "") -> Task:
    """Load one PinchBench task file. Raises TaskError with the file and line."""
    where = str(md)
    text = md.read_text(encoding="utf-8")
    meta, body, body_line = split_front_matter(text, where)
    secs = sections(body)
    prompt = secs.get("prompt", "")
    if not prompt:
        line = _line_of(text, "## Prompt") if "prompt" in secs else body_line
        raise TaskError("missing or empty `## Prompt` section", where, line)
    grading = meta.get("grading_type") or "automated"
    checker = _checker(secs, md, text)
    rubric = rules_from_markdown(secs.get("llm judge rubric", ""))
    fields = graded(
        split, meta.get("category"), grading, (checker, rubric), where, _line_of(text, "grading_type")
    )
    entries = meta.get("workspace_files") or []
    if not isinstance(entries, list):
        raise TaskError("`workspace_files` must be a list", where, _line_of(text, "workspace_files"))
    workspace = [f for entry in entries for f in _workspace_entry(entry, md, text)]
    weights = meta.get("grading_weights") or {}
    timeout = meta.get("timeout_seconds")
    known = {"id", "category", "grading_type", "timeout_seconds", "workspace_files", "grading_weights"}
    extra = {k: v for k, v in meta.items() if k not in known}
    extra.update({k: v for k, v in secs.items() if k in ("expected behavior", "grading criteria")})
    return Task(
        id=str(meta.get("id") or md.stem),
        prompt=prompt,
        workspace=workspace,
        **fields,
        grading_weights={str(k): float(v) for k, v in weights.items()} if isinstance(weights, dict) else {},
        timeout_s=float(timeout) if timeout is not None else None,
        source=where,
        metadata=extra,
    )


def _is_task_file(md: Path) -> bool:
    """`task_*.md` in a folder that has such files (PinchBench), else any task-like `.md` file."""
    if any(md.parent.glob("task_*.md")):
        return md.name.startswith("task_")
    return looks_like_task(md)


def load_markdown_dir(root: Path) -> tuple[list[Task], list[TaskError]]:
    """Every task `.md` file under `root` (recursively, see `_is_task_file`); split = its folder name."""
    tasks: list[Task] = []
    rejected: list[TaskError] = []
    for md in sorted(root.rglob("*.md")):
        if _is_task_file(md):
            result = try_load_markdown(md)
            (tasks if isinstance(result, Task) else rejected).append(result)  # type: ignore[arg-type]
    return tasks, rejected


def try_load_markdown(md: Path) -> Task | TaskError:
    """`load_markdown` (split = the file's folder name), with every failure as a TaskError."""
    try:
        return load_markdown(md, md.parent.name)
    except TaskError as e:
        return e
    except (ValidationError, OSError, UnicodeDecodeError, ValueError, TypeError) as e:
        return TaskError(f"invalid task: {e}", str(md))
