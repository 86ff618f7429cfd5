"""task_0032 (report_writing): budget review: variance table sorted by variance %, Total row, summary
numbers, over-budget list.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "review_exists",
    "summary_total_variance",
    "summary_total_percent",
    "table_header",
    "rows_sorted_by_percent",
    "variance_values",
    "percent_values",
    "total_row",
    "over_budget_list",
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


ORDER = ["Facilities", "Engineering", "Sales", "Support", "Marketing", "Legal"]
VARIANCE = [11400, 31500, 15000, 0, -18000, -9200]
PERCENT = [19.0, 7.5, 6.0, 0.0, -10.0, -23.0]


def _score(ws: Path, s: dict) -> None:
    text = _text(ws / "finance" / "budget_review.md")
    s["review_exists"] = float(bool(text.strip()))
    sec = _sections(text)
    nums = _numbers(sec.get("summary", ""))
    s["summary_total_variance"] = float(30700.0 in nums)
    s["summary_total_percent"] = float(2.9 in nums)
    over = [ln.strip().lstrip("-* ").strip() for ln in sec.get("over budget", "").splitlines() if ln.strip()]
    s["over_budget_list"] = float(over == ["Facilities", "Engineering", "Sales"])
    tables = _tables(sec.get("by department", ""))
    if not tables:
        return
    rows = tables[0]
    want = ["department", "planned", "actual", "variance", "variance %"]
    s["table_header"] = float([c.lower() for c in rows[0]] == want)
    body = [r for r in rows[1:] if len(r) == 5]
    depts = [r for r in body if r[0].replace("*", "").strip().lower() != "total"]
    total = [r for r in body if r[0].replace("*", "").strip().lower() == "total"]
    s["rows_sorted_by_percent"] = float([r[0] for r in depts] == ORDER)
    s["variance_values"] = float([_num(r[3]) for r in depts] == VARIANCE)
    s["percent_values"] = float([_num(r[4]) for r in depts] == PERCENT)
    s["total_row"] = float(
        len(total) == 1
        and body[-1] is total[0]
        and [_num(c) for c in total[0][1:]] == [1045000, 1075700, 30700, 2.9]
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
