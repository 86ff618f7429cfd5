"""task_0012 (file_edit): .dockerignore deduplicated (first occurrence, order kept), comment kept, three
patterns present once.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "file_exists",
    "comment_first",
    "no_duplicates",
    "original_order_kept",
    "required_patterns_present",
    "missing_ones_appended_at_end",
    "nothing_else_removed",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


ORDER = [".git", "node_modules/", "*.pyc", "dist/", "*.log", "coverage/", "secrets.env"]
REQUIRED = ["__pycache__/", "*.log", ".venv/"]


def _score(ws: Path, s: dict) -> None:
    lines = [line.strip() for line in _text(ws / ".dockerignore").splitlines() if line.strip()]
    s["file_exists"] = 1.0
    s["comment_first"] = float(bool(lines) and lines[0] == "# files the image never needs")
    patterns = [line for line in lines if not line.startswith("#")]
    s["no_duplicates"] = float(len(patterns) == len(set(patterns)))
    s["original_order_kept"] = float(patterns[: len(ORDER)] == ORDER)
    s["required_patterns_present"] = float(all(p in patterns for p in REQUIRED))
    s["missing_ones_appended_at_end"] = float(sorted(patterns[len(ORDER) :]) == [".venv/", "__pycache__/"])
    s["nothing_else_removed"] = float(set(ORDER) <= set(patterns))


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
