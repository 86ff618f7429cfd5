"""task_0013 (file_edit): version 0.8.1 -> 0.9.0 in version.py, pyproject [project] version and README
install line; dependency pin untouched.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "version_py_bumped",
    "pyproject_version_bumped",
    "readme_bumped",
    "dependency_pin_untouched",
    "no_other_lines_changed",
    "no_stale_version",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


FILES = {
    "src/weatherkit/version.py": '__version__ = "0.8.1"\n',
    "pyproject.toml": '[project]\nname = "weatherkit"\nversion = "0.8.1"\ndependencies = [\n    "geotools==0.8.1",\n    "httpx>=0.27",\n]\n',
    "README.md": "# weatherkit\n\nInstall with `pip install weatherkit==0.8.1`.\n\nRequires geotools 0.8.1 (pinned).\n",
}
CHANGED = {
    "src/weatherkit/version.py": {0: '__version__ = "0.9.0"'},
    "pyproject.toml": {2: 'version = "0.9.0"'},
    "README.md": {2: "Install with `pip install weatherkit==0.9.0`."},
}


def _score(ws: Path, s: dict) -> None:
    got = {rel: _text(ws / rel).splitlines() if (ws / rel).is_file() else [] for rel in FILES}
    s["version_py_bumped"] = float(got["src/weatherkit/version.py"][:1] == ['__version__ = "0.9.0"'])
    s["pyproject_version_bumped"] = float('version = "0.9.0"' in got["pyproject.toml"])
    s["readme_bumped"] = float("Install with `pip install weatherkit==0.9.0`." in got["README.md"])
    s["dependency_pin_untouched"] = float(
        '    "geotools==0.8.1",' in got["pyproject.toml"]
        and "Requires geotools 0.8.1 (pinned)." in got["README.md"]
    )
    same = True
    for rel, text in FILES.items():
        want = text.splitlines()
        for i, line in CHANGED[rel].items():
            want[i] = line
        same = same and got[rel] == want
    s["no_other_lines_changed"] = float(same)
    stale = [line for lines in got.values() for line in lines if "0.8.1" in line and "geotools" not in line]
    s["no_stale_version"] = float(not stale and all(got.values()))


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
