"""task_0042 (report_writing): weekly totals keyed by Monday (data starts on a Wednesday), top-3 pages, grand
total 4115.
"""

import json
import re
import sys
from pathlib import Path

KEYS = (
    "report_exists",
    "weekly_header",
    "week_labels_monday",
    "weekly_values",
    "top_pages_order",
    "top_pages_values",
    "total_visits",
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


WEEKS = [("2026-10-05", 1251), ("2026-10-12", 1393), ("2026-10-19", 1278), ("2026-10-26", 193)]
TOP = [("/", 1809), ("/docs", 917), ("/pricing", 654)]


def _score(ws: Path, s: dict) -> None:
    text = _text(ws / "analytics" / "traffic_report.md")
    s["report_exists"] = float(bool(text.strip()))
    sec = _sections(text)
    s["total_visits"] = float(4115.0 in _numbers(sec.get("total", "")))
    items = [ln.strip() for ln in sec.get("top pages", "").splitlines() if ln.strip()]
    parsed = [re.fullmatch(r"\d+\.\s+`?(/[\w/.-]*)`?\s*:\s*([\d,]+)(?:\s+visits)?", ln) for ln in items]
    got = [(m[1], int(m[2].replace(",", ""))) for m in parsed if m]
    s["top_pages_order"] = float([g[0] for g in got] == [t[0] for t in TOP] and len(items) == 3)
    s["top_pages_values"] = float(got == TOP)
    tables = _tables(sec.get("weekly totals", ""))
    if not tables:
        return
    rows = tables[0]
    s["weekly_header"] = float([c.lower() for c in rows[0]] == ["week starting", "visits"])
    body = [r for r in rows[1:] if len(r) == 2]
    s["week_labels_monday"] = float(
        [r[0] for r in body] == [w[0] for w in WEEKS] and len(body) == len(rows) - 1
    )
    s["weekly_values"] = float([(r[0], _num(r[1])) for r in body] == WEEKS)


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
