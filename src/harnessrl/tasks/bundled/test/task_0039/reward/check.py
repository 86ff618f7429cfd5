"""task_0039 (data_processing): books deduplicated by digits-only ISBN keeping the latest year, sorted by
author last name then title.
"""

import csv
import io
import json
import sys
from pathlib import Path

KEYS = (
    "catalog_exists",
    "header_exact",
    "isbn_digits_only",
    "one_row_per_book",
    "latest_year_kept",
    "sort_by_last_name",
    "title_tiebreak",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


EXPECTED = [
    ["9780743273565", "The Great Gatsby", "F. Scott Fitzgerald", "2004"],
    ["9780553380163", "A Brief History of Time", "Stephen Hawking", "2011"],
    ["9780061120084", "To Kill a Mockingbird", "Harper Lee", "2006"],
    ["9780143039433", "The Road", "Cormac McCarthy", "2007"],
    ["9781400033416", "Kafka on the Shore", "Haruki Murakami", "2005"],
    ["9780375704024", "Norwegian Wood", "Haruki Murakami", "2000"],
    ["9780141187761", "Of Mice and Men", "John Steinbeck", "1993"],
]


def _score(ws: Path, s: dict) -> None:
    rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO(_text(ws / "catalog.csv"))) if r]
    s["catalog_exists"] = 1.0
    if not rows:
        return
    s["header_exact"] = float(rows[0] == ["isbn", "title", "author", "year"])
    body = [r for r in rows[1:] if len(r) == 4]
    isbns = [r[0] for r in body]
    s["isbn_digits_only"] = float(bool(body) and all(i.isdigit() and len(i) == 13 for i in isbns))
    s["one_row_per_book"] = float(
        sorted(isbns) == sorted(e[0] for e in EXPECTED) and len(body) == len(rows) - 1
    )
    got = {r[0]: r for r in body}
    s["latest_year_kept"] = float(all(got.get(e[0], [""] * 4)[3] == e[3] for e in EXPECTED))
    s["sort_by_last_name"] = float([r[2] for r in body] == [e[2] for e in EXPECTED])
    s["title_tiebreak"] = float(body == EXPECTED)


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
