"""task_0021 (data_processing): nested org.json flattened to employees.csv with manager names resolved across
departments, numeric id sort.
"""

import csv
import io
import json
import sys
from pathlib import Path

KEYS = (
    "csv_exists",
    "header_exact",
    "everyone_once",
    "departments_correct",
    "managers_resolved",
    "cross_department_manager",
    "self_manager_empty",
    "numeric_sort",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


EXPECTED = [
    ["7", "Marco Rossi", "Head of Sales", "Sales", ""],
    ["9", "Kwame Mensah", "Support Engineer", "Support", "Sara Lind"],
    ["12", "Yuki Tanaka", "VP Engineering", "Engineering", ""],
    ["27", "Sara Lind", "QA Lead", "Engineering", "Yuki Tanaka"],
    ["88", "Ines Duarte", "Account Executive", "Sales", "Marco Rossi"],
    ["103", "Owen Price", "Firmware Engineer", "Engineering", "Yuki Tanaka"],
    ["140", "Lea Novak", "Support Engineer", "Support", "Sara Lind"],
]


def _score(ws: Path, s: dict) -> None:
    rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO(_text(ws / "employees.csv"))) if r]
    s["csv_exists"] = 1.0
    if not rows:
        return
    s["header_exact"] = float(rows[0] == ["id", "name", "title", "department", "manager"])
    body = [r + [""] * (5 - len(r)) for r in rows[1:] if len(r) in (4, 5)]
    ids = [r[0] for r in body]
    s["everyone_once"] = float(sorted(ids) == sorted(e[0] for e in EXPECTED) and len(body) == len(rows) - 1)
    got = {r[0]: r for r in body}
    blank = [""] * 5
    s["departments_correct"] = float(all(got.get(e[0], blank)[1:4] == e[1:4] for e in EXPECTED))
    s["managers_resolved"] = float(all(got.get(e[0], blank)[4] == e[4] for e in EXPECTED))
    s["cross_department_manager"] = float(got.get("9", blank)[4] == "Sara Lind" == got.get("140", blank)[4])
    s["self_manager_empty"] = float(got.get("7", ["x"] * 5)[4] == "" and got.get("12", ["x"] * 5)[4] == "")
    s["numeric_sort"] = float(ids == [e[0] for e in EXPECTED])


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
