"""task_0043 (report_writing): contributor table grouped by email (alias merged), bots excluded, sorted with
tie-break, shares, summary.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "report_exists",
    "table_header",
    "bots_excluded",
    "alias_merged",
    "commit_counts",
    "sort_order",
    "shares",
    "summary_numbers",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _sections(text: str) -> dict:
    """Lower-cased heading text -> the lines under it (up to the next heading of any level)."""
    out: dict = {}
    current = None
    for line in text.splitlines():
        if line.startswith("#"):
            current = line.lstrip("#").strip().lower()
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return {k: "\n".join(v) for k, v in out.items()}


def _tables(text: str) -> list:
    """Every markdown pipe table in `text`: a list of rows (header first, separator row dropped)."""
    tables, rows = [], []
    for line in text.splitlines() + [""]:
        t = line.strip()
        if t.startswith("|"):
            cells = [c.strip() for c in t.strip("|").split("|")]
            if not all(c and set(c) <= set("-: ") for c in cells):
                rows.append(cells)
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def _num(cell: str):
    """A number from a table cell or phrase: tolerates **bold**, commas, %, +, currency signs; None if not."""
    t = cell.replace("*", "").replace(",", "").replace("%", "").replace("$", "").replace("€", "").strip()
    try:
        return float(t)
    except ValueError:
        return None


def _numbers(text: str) -> list:
    """All numbers written in `text` (commas as thousands separators allowed)."""
    import re

    return [float(m.replace(",", "")) for m in re.findall(r"-?\d[\d,]*(?:\.\d+)?", text)]


ROWS = [
    ("Ana Ruiz", 14, "35.0%"),
    ("Kofi Boateng", 11, "27.5%"),
    ("Mei Lin", 11, "27.5%"),
    ("Olaf Berg", 3, "7.5%"),
    ("Sam Okafor", 1, "2.5%"),
]


def _score(ws: Path, s: dict) -> None:
    text = _text(ws / "repo" / "contributors.md")
    s["report_exists"] = float(bool(text.strip()))
    sec = _sections(text)
    nums = _numbers(sec.get("summary", ""))
    s["summary_numbers"] = float(40.0 in nums and 5.0 in nums)
    tables = _tables(sec.get("contributors", ""))
    if not tables:
        return
    rows = tables[0]
    s["table_header"] = float([c.lower() for c in rows[0]] == ["author", "commits", "share"])
    body = [r for r in rows[1:] if len(r) == 3]
    names = [r[0] for r in body]
    s["bots_excluded"] = float(bool(body) and not any("[bot]" in n for n in names))
    s["alias_merged"] = float("mlin" not in names and "Mei Lin" in names)
    got = {r[0]: r for r in body}
    s["commit_counts"] = float(
        all(_num(got.get(n, ["", "", ""])[1]) == c for n, c, _ in ROWS) and len(body) == len(ROWS)
    )
    s["sort_order"] = float(names == [r[0] for r in ROWS])
    s["shares"] = float(all(got.get(n, ["", "", ""])[2].replace(" ", "") == sh for n, _, sh in ROWS))


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
