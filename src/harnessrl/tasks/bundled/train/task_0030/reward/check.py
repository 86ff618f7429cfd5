"""task_0030 (report_writing): incident review: severity table with open counts and mean minutes, longest
incident, open list.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "review_exists",
    "title_first",
    "severity_table_header",
    "severity_counts",
    "open_counts",
    "mean_minutes",
    "longest_incident",
    "open_list_exact",
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


def _score(ws: Path, s: dict) -> None:
    text = _text(ws / "incident_review.md")
    s["review_exists"] = float(bool(text.strip()))
    lines = [ln for ln in text.splitlines() if ln.strip()]
    s["title_first"] = float(bool(lines) and lines[0].strip() == "# Incident summary")
    sec = _sections(text)
    longest = sec.get("longest incident", "")
    s["longest_incident"] = float(
        "INC-303" in longest and "payments" in longest and 210.0 in _numbers(longest)
    )
    opened = [ln.strip() for ln in sec.get("open incidents", "").splitlines() if ln.strip()]
    s["open_list_exact"] = float(opened == ["- INC-304 (emails)", "- INC-307 (auth)"])
    tables = _tables(sec.get("by severity", ""))
    if not tables:
        return
    rows = tables[0]
    want = ["severity", "incidents", "open", "mean minutes to resolve"]
    s["severity_table_header"] = float([c.lower() for c in rows[0]] == want)
    body = [r for r in rows[1:] if len(r) == 4]
    if [r[0] for r in body] != ["sev1", "sev2", "sev3"]:
        return
    s["severity_counts"] = float([_num(r[1]) for r in body] == [1, 3, 4])
    s["open_counts"] = float([_num(r[2]) for r in body] == [0, 1, 1])
    s["mean_minutes"] = float([_num(r[3]) for r in body] == [210.0, 107.5, 20.7])


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
