"""task_0001 (warmup): notes/todo.txt gets "- buy coffee filters" appended; the three old lines stay first and unchanged."""

import json
import subprocess
import sys
from pathlib import Path

KEYS = ('todo_exists', 'old_lines_kept', 'new_line_last', 'line_count_is_4', 'no_blank_lines')


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _probe(ws: Path, code: str, timeout: float = 20.0):
    """Run `code` with python3 in the workspace; return the JSON it prints last (None on failure)."""
    try:
        done = subprocess.run(
            [sys.executable, "-B", "-c", code], cwd=ws, capture_output=True, text=True, timeout=timeout
        )
        lines = done.stdout.strip().splitlines()
        return json.loads(lines[-1]) if done.returncode == 0 and lines else None
    except Exception:
        return None


def _unittest(ws: Path, timeout: float = 60.0) -> tuple[int, str]:
    """Run `python3 -m unittest` in the workspace; return (exit code, combined output)."""
    try:
        done = subprocess.run(
            [sys.executable, "-B", "-m", "unittest", "-v"], cwd=ws, capture_output=True, text=True,
            timeout=timeout,
        )
        return done.returncode, done.stdout + done.stderr
    except Exception as exc:
        return -1, repr(exc)


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
