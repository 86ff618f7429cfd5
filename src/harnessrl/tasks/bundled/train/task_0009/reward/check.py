"""task_0009 (file_edit): requirements.txt: requests==2.32.3, nose removed, pytest==8.3.3 added, others kept,
sorted case-insensitively.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "requirements_exists",
    "requests_pinned",
    "nose_removed",
    "pytest_added",
    "others_unchanged",
    "sorted_case_insensitive",
    "no_duplicates",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


OTHERS = ["click==8.1.7", "Flask==3.0.3", "Jinja2==3.1.4", "numpy>=1.26", "PyYAML==6.0.2", "urllib3<3"]


def _score(ws: Path, s: dict) -> None:
    path = ws / "requirements.txt"
    lines = [line.strip() for line in _text(path).splitlines() if line.strip()]
    s["requirements_exists"] = 1.0
    names = [line.split("=")[0].split("<")[0].split(">")[0].strip().lower() for line in lines]
    s["requests_pinned"] = float("requests==2.32.3" in lines)
    s["nose_removed"] = float("nose" not in names)
    s["pytest_added"] = float("pytest==8.3.3" in lines)
    s["others_unchanged"] = float(all(o in lines for o in OTHERS))
    s["sorted_case_insensitive"] = float(names == sorted(names) and len(names) >= 8)
    s["no_duplicates"] = float(len(names) == len(set(names)) and len(names) >= 8)


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
