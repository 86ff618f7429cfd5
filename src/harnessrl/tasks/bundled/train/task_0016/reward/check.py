"""task_0016 (data_processing): customers joined with paid orders -> customer_totals.csv (counts, 2-decimal
totals, tie-broken sort).
"""

import csv
import io
import json
import sys
from pathlib import Path

KEYS = (
    "totals_exists",
    "header_exact",
    "all_customers_once",
    "counts_correct",
    "totals_correct",
    "two_decimals",
    "sort_order",
    "unknown_customer_ignored",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


EXPECTED = [
    ["C03", "Juniper Labs", "1", "410.25"],
    ["C01", "Harbor Coffee", "3", "120.10"],
    ["C02", "Ironleaf Books", "2", "120.10"],
    ["C06", "Maple Row Bakery", "1", "100.00"],
    ["C05", "Lumen Dental", "1", "99.90"],
    ["C04", "Kite & Co", "0", "0.00"],
]


def _score(ws: Path, s: dict) -> None:
    rows = list(csv.reader(io.StringIO(_text(ws / "report" / "customer_totals.csv"))))
    s["totals_exists"] = 1.0
    if not rows:
        return
    s["header_exact"] = float(rows[0] == ["customer_id", "name", "order_count", "total"])
    body = [r for r in rows[1:] if r]
    if not all(len(r) == 4 for r in body):
        return
    ids = [r[0] for r in body]
    s["all_customers_once"] = float(sorted(ids) == sorted(e[0] for e in EXPECTED))
    s["unknown_customer_ignored"] = float("C09" not in ids and len(body) > 0)
    got = {r[0]: r for r in body}
    s["counts_correct"] = float(all(got.get(e[0], [""] * 4)[2] == e[2] for e in EXPECTED))

    def num(x: str) -> float:
        try:
            return float(x)
        except ValueError:
            return -1.0

    s["totals_correct"] = float(
        all(abs(num(got.get(e[0], [""] * 4)[3]) - float(e[3])) < 0.005 for e in EXPECTED)
    )
    s["two_decimals"] = float(all(len(r[3].split(".")[-1]) == 2 and "." in r[3] for r in body) and bool(body))
    s["sort_order"] = float(ids == [e[0] for e in EXPECTED])


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
