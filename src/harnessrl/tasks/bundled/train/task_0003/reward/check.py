"""task_0003 (warmup): project/src and project/tests with empty __init__.py files, project/README.md starting
"# project".
"""

import json
import sys
from pathlib import Path

KEYS = ("src_dir", "tests_dir", "src_init_empty", "tests_init_empty", "readme_heading")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _score(ws: Path, s: dict) -> None:
    root = ws / "project"
    s["src_dir"] = float((root / "src").is_dir())
    s["tests_dir"] = float((root / "tests").is_dir())
    for name, key in (("src", "src_init_empty"), ("tests", "tests_init_empty")):
        init = root / name / "__init__.py"
        s[key] = float(init.is_file() and init.stat().st_size == 0)
    readme = root / "README.md"
    if readme.is_file():
        lines = _text(readme).splitlines()
        s["readme_heading"] = float(bool(lines) and lines[0].strip() == "# project")


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
