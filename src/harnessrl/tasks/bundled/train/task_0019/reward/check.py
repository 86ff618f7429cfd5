"""task_0019 (data_processing): per-student averages (missing scores skipped), letter grades at exact
boundaries, class median, top student.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "summary_is_object",
    "students_exact",
    "averages_correct",
    "grades_correct",
    "boundary_grades",
    "missing_score_skipped",
    "class_median",
    "top_student",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


AVG = {"Amara": 91.7, "Benedikt": 71.7, "Carmen": 80.0, "Dmitri": 58.0, "Efua": 94.5, "Farid": 70.0}
GRADE = {"Amara": "A", "Benedikt": "C", "Carmen": "B", "Dmitri": "F", "Efua": "A", "Farid": "C"}


def _score(ws: Path, s: dict) -> None:
    data = json.loads(_text(ws / "summary.json"))
    if not isinstance(data, dict):
        return
    s["summary_is_object"] = 1.0
    students = data.get("students")
    if isinstance(students, dict):
        s["students_exact"] = float(sorted(students) == sorted(AVG))
        rec = {k: v for k, v in students.items() if isinstance(v, dict)}

        def avg(name: str) -> object:
            return rec.get(name, {}).get("average")

        def grade(name: str) -> object:
            return rec.get(name, {}).get("grade")

        s["averages_correct"] = float(all(avg(k) == v for k, v in AVG.items()))
        s["grades_correct"] = float(all(grade(k) == v for k, v in GRADE.items()))
        s["boundary_grades"] = float(grade("Carmen") == "B" and grade("Farid") == "C")
        s["missing_score_skipped"] = float(avg("Efua") == 94.5 and grade("Efua") == "A")
    s["class_median"] = float(data.get("class_median") == 75.8)
    s["top_student"] = float(data.get("top_student") == "Efua")


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
