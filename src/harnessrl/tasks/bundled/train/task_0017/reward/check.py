"""task_0017 (data_processing): reorder.csv of non-discontinued items with qty < reorder_level, shortfall,
sorted desc then by sku.
"""

import csv
import io
import json
import sys
from pathlib import Path

KEYS = (
    "reorder_exists",
    "header_exact",
    "skus_exact",
    "shortfalls_correct",
    "discontinued_excluded",
    "at_level_excluded",
    "sort_order",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


EXPECTED = [
    ["RT-102", "Label rolls", "22"],
    ["RT-105", "Corner guards", "22"],
    ["RT-099", "Desiccant bags", "6"],
    ["RT-100", "Pallet wrap", "6"],
    ["RT-106", "Stretch hood", "6"],
]


def _score(ws: Path, s: dict) -> None:
    rows = [r for r in csv.reader(io.StringIO(_text(ws / "reorder.csv"))) if r]
    s["reorder_exists"] = 1.0
    if not rows:
        return
    s["header_exact"] = float([c.strip() for c in rows[0]] == ["sku", "name", "shortfall"])
    body = [[c.strip() for c in r] for r in rows[1:]]
    skus = [r[0] for r in body]
    s["skus_exact"] = float(sorted(skus) == sorted(e[0] for e in EXPECTED))
    got = {r[0]: r for r in body if len(r) == 3}
    s["shortfalls_correct"] = float(all(got.get(e[0]) == e for e in EXPECTED))
    s["discontinued_excluded"] = float("RT-103" not in skus and bool(body))
    s["at_level_excluded"] = float("RT-104" not in skus and bool(body))
    s["sort_order"] = float(skus == [e[0] for e in EXPECTED])


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
