"""task_0034 (warmup): count.txt holds the line count of words.txt (23) as bare digits; words.txt unchanged."""

import json
import sys
from pathlib import Path

KEYS = ("count_exists", "count_is_digits", "count_correct", "words_untouched")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


WORDS = [
    "apple",
    "birch",
    "cobalt",
    "delta",
    "ember",
    "fjord",
    "garnet",
    "harbor",
    "indigo",
    "juniper",
    "kelp",
    "lumen",
    "maple",
    "nectar",
    "onyx",
    "pepper",
    "quartz",
    "raven",
    "sable",
    "tundra",
    "umber",
    "violet",
    "walnut",
]


def _score(ws: Path, s: dict) -> None:
    words = ws / "words.txt"
    s["words_untouched"] = float(words.is_file() and _text(words).splitlines() == WORDS)
    path = ws / "count.txt"
    if not path.is_file():
        return
    s["count_exists"] = 1.0
    text = _text(path).strip()
    s["count_is_digits"] = float(text.isdigit())
    s["count_correct"] = float(text.isdigit() and int(text) == len(WORDS))


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
