"""task_0035 (warmup): run.sh gets its executable bit with unchanged content; logs/.keep exists and is empty."""

import json
import os
import sys
from pathlib import Path

KEYS = ("run_executable", "run_unchanged", "logs_dir", "keep_exists", "keep_empty")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


RUN = '#!/usr/bin/env bash\necho "starting worker"\n'


def _score(ws: Path, s: dict) -> None:
    run = ws / "run.sh"
    s["run_executable"] = float(run.is_file() and os.access(run, os.X_OK))
    s["run_unchanged"] = float(run.is_file() and _text(run) == RUN)
    s["logs_dir"] = float((ws / "logs").is_dir())
    keep = ws / "logs" / ".keep"
    s["keep_exists"] = float(keep.is_file())
    s["keep_empty"] = float(keep.is_file() and keep.stat().st_size == 0)


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
