"""task_0001 (warmup): notes/todo.txt gets "- buy coffee filters" appended; the three old lines stay first
and unchanged.
"""

import json
import sys
from pathlib import Path

KEYS = ("todo_exists", "old_lines_kept", "new_line_last", "line_count_is_4", "no_blank_lines")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


OLD = ["- water the plants", "- call the landlord", "- renew library card"]


def _score(ws: Path, s: dict) -> None:
    path = ws / "notes" / "todo.txt"
    if not path.is_file():
        return
    s["todo_exists"] = 1.0
    lines = _text(path).splitlines()
    s["old_lines_kept"] = float(lines[:3] == OLD)
    s["new_line_last"] = float(bool(lines) and lines[-1].rstrip() == "- buy coffee filters")
    s["line_count_is_4"] = float(len(lines) == 4)
    s["no_blank_lines"] = float(all(line.strip() for line in lines) and len(lines) > 3)


def grade(transcript: list, workspace_path: str) -> dict:
    """Each value is 0.0 or 1.0; the task score is their mean. Never raises."""
    scores = {key: 0.0 for key in KEYS}
    try:
        _score(Path(workspace_path), scores)
    except BaseException:  # garbage in the workspace must cost metrics, not crash the checker
        pass
    return scores


def main() -> None:
    workspace_path = sys.argv[1] if len(sys.argv) > 1 else "."
    print(json.dumps(grade([], workspace_path), indent=2))


if __name__ == "__main__":
    main()
