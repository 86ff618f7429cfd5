"""task_0038 (data_processing): survey tally excluding test responses (missing flag = real), per-answer
counts, skipped answers, rounded mean.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "results_is_object",
    "responses_count",
    "test_rows_excluded",
    "remote_counts",
    "office_counts",
    "satisfaction_avg",
    "no_missing_as_answer",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _score(ws: Path, s: dict) -> None:
    data = json.loads(_text(ws / "survey" / "results.json"))
    if not isinstance(data, dict):
        return
    s["results_is_object"] = 1.0
    s["responses_count"] = float(data.get("responses") == 7)
    remote, office = data.get("remote"), data.get("office")
    s["remote_counts"] = float(remote == {"yes": 4, "no": 2})
    s["office_counts"] = float(office == {"Berlin": 3, "Porto": 2, "Nairobi": 2})
    s["test_rows_excluded"] = float(s["responses_count"] == 1.0 and s["office_counts"] == 1.0)
    s["satisfaction_avg"] = float(data.get("satisfaction_avg") == 3.83)
    answers = [k for d in (remote, office) if isinstance(d, dict) for k in d]
    s["no_missing_as_answer"] = float(
        bool(answers) and not any(str(k).lower() in ("none", "null", "", "missing") for k in answers)
    )


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
