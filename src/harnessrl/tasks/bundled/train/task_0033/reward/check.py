"""task_0033 (report_writing): CI report: pass rate 72.7% (skips excluded), outcome counts, problems table
sorted by duration, top-3 slowest.
"""

import json
import re
import sys
from pathlib import Path

KEYS = (
    "report_exists",
    "pass_rate",
    "outcome_table",
    "problems_tests",
    "problems_sorted",
    "problems_messages",
    "slowest_three",
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
    text = _text(ws / "ci" / "test_report.md")
    s["report_exists"] = float(bool(text.strip()))
    sec = _sections(text)
    overview = sec.get("overview", "")
    s["pass_rate"] = float(re.search(r"(?<![\d.])72\.7\s*%", overview) is not None)
    tables = _tables(overview)
    if tables:
        rows = [[c.lower() for c in r] for r in tables[0]]
        s["outcome_table"] = float(
            rows[0] == ["outcome", "count"]
            and [(r[0], _num(r[1])) for r in rows[1:] if len(r) == 2]
            == [("passed", 8), ("failed", 2), ("error", 1), ("skipped", 1)]
        )
    slow = [ln.strip() for ln in sec.get("slowest tests", "").splitlines() if ln.strip()]
    parsed = [re.fullmatch(r"(\d+)\.\s+`?([\w.]+)`?\s+\(([\d.]+)\s*s\)", ln) for ln in slow]
    got = [(int(m[1]), m[2], float(m[3])) for m in parsed if m]
    want = [
        (1, "test_refund_flow", 7.48),
        (2, "test_webhook_retry", 6.3),
        (3, "test_search_pagination", 5.12),
    ]
    s["slowest_three"] = float(got == want and len(slow) == 3)
    tables = _tables(sec.get("problems", ""))
    if not tables:
        return
    rows = tables[0]
    body = [r for r in rows[1:] if len(r) == 4]
    names = [r[0].strip("`") for r in body]
    ok_header = [c.lower() for c in rows[0]] == ["test", "outcome", "duration (s)", "message"]
    s["problems_tests"] = float(
        ok_header and sorted(names) == ["test_admin_audit_log", "test_checkout_total", "test_refund_flow"]
    )
    s["problems_sorted"] = float(names == ["test_refund_flow", "test_checkout_total", "test_admin_audit_log"])
    msgs = {r[0].strip("`"): (r[1].lower(), r[3]) for r in body}
    s["problems_messages"] = float(
        msgs.get("test_refund_flow") == ("failed", "timeout after 7s")
        and msgs.get("test_admin_audit_log") == ("error", "fixture db not found")
        and msgs.get("test_checkout_total") == ("failed", "expected 19.99, got 20.00")
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
