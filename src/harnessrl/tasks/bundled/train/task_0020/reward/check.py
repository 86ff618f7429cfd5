"""task_0020 (data_processing): daily min/max/mean over valid readings (NA/empty skipped), one-decimal
format, empty days omitted.
"""

import csv
import io
import json
import sys
from pathlib import Path

KEYS = (
    "stats_exists",
    "header_exact",
    "days_exact",
    "empty_day_omitted",
    "readings_counts",
    "min_max_correct",
    "means_correct",
    "one_decimal_format",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


EXPECTED = [
    ["2026-03-01", "3", "3.1", "9.8", "5.7"],
    ["2026-03-02", "4", "-0.4", "7.9", "3.8"],
    ["2026-03-04", "3", "-2.5", "3.3", "0.6"],
]


def _score(ws: Path, s: dict) -> None:
    rows = [
        [c.strip() for c in r] for r in csv.reader(io.StringIO(_text(ws / "data" / "daily_stats.csv"))) if r
    ]
    s["stats_exists"] = 1.0
    if not rows:
        return
    s["header_exact"] = float(rows[0] == ["date", "readings", "min", "max", "mean"])
    body = [r for r in rows[1:] if len(r) == 5]
    s["days_exact"] = float([r[0] for r in body] == [e[0] for e in EXPECTED] and len(body) == len(rows) - 1)
    s["empty_day_omitted"] = float(bool(body) and not any(r[0] == "2026-03-03" for r in body))
    got = {r[0]: r for r in body}
    blank = ["", "", "", "", ""]
    s["readings_counts"] = float(all(got.get(e[0], blank)[1] == e[1] for e in EXPECTED))

    def close(a: str, b: str) -> bool:
        try:
            return abs(float(a) - float(b)) < 0.051
        except ValueError:
            return False

    s["min_max_correct"] = float(
        all(close(got.get(e[0], blank)[2], e[2]) and close(got.get(e[0], blank)[3], e[3]) for e in EXPECTED)
    )
    s["means_correct"] = float(all(close(got.get(e[0], blank)[4], e[4]) for e in EXPECTED))
    s["one_decimal_format"] = float(body == EXPECTED)


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
