"""task_0005 (warmup): backup/raw.csv is a byte-identical copy of data/raw.csv, which stays in place
unchanged.
"""

import json
import sys
from pathlib import Path

KEYS = ("backup_dir", "backup_exists", "backup_identical", "original_kept")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


RAW = "sensor,reading\ns1,0.42\ns2,0.57\ns3,0.61\n"


def _score(ws: Path, s: dict) -> None:
    s["backup_dir"] = float((ws / "backup").is_dir())
    original = ws / "data" / "raw.csv"
    s["original_kept"] = float(original.is_file() and _text(original) == RAW)
    copy = ws / "backup" / "raw.csv"
    if copy.is_file():
        s["backup_exists"] = 1.0
        s["backup_identical"] = float(_text(copy) == RAW)


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
