"""task_0000 (warmup): hello.txt holds exactly the line "Hello, harness!". README.md must stay untouched."""

import json
import sys
from pathlib import Path

KEYS = ("hello_exists", "hello_text_exact", "hello_single_line", "readme_untouched")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


README = "# Scratch space\n\nNothing here yet.\n"


def _score(ws: Path, s: dict) -> None:
    s["readme_untouched"] = float((ws / "README.md").is_file() and _text(ws / "README.md") == README)
    path = ws / "hello.txt"
    if not path.is_file():
        return
    s["hello_exists"] = 1.0
    text = _text(path)
    s["hello_text_exact"] = float(text.strip() == "Hello, harness!")
    s["hello_single_line"] = float(text.rstrip("\n").count("\n") == 0 and text.strip() != "")


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
