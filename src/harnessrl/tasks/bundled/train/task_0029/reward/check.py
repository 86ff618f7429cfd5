"""task_0029 (report_writing): signups.md with Summary (total 6760, best month 2026-11), a
Month/Signups/Change table, Observations bullets.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "report_exists",
    "sections_present",
    "total_in_summary",
    "best_month_in_summary",
    "table_header",
    "table_months_in_order",
    "signups_values",
    "change_values",
    "observations_bullets",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


SIGNUPS = [412, 389, 455, 520, 498, 610, 575, 540, 702, 688, 731, 640]
MONTHS = [f"2026-{m:02d}" for m in range(1, 13)]


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
    text = _text(ws / "reports" / "signups.md")
    s["report_exists"] = float(bool(text.strip()))
    sec = _sections(text)
    s["sections_present"] = float(all(k in sec for k in ("summary", "monthly table", "observations")))
    summary = sec.get("summary", "")
    s["total_in_summary"] = float(6760.0 in _numbers(summary))
    s["best_month_in_summary"] = float("2026-11" in summary)
    bullets = [ln for ln in sec.get("observations", "").splitlines() if ln.strip().startswith(("- ", "* "))]
    s["observations_bullets"] = float(len(bullets) >= 2)
    tables = _tables(sec.get("monthly table", ""))
    if not tables:
        return
    rows = tables[0]
    s["table_header"] = float([c.lower() for c in rows[0]] == ["month", "signups", "change"])
    body = [r for r in rows[1:] if len(r) == 3]
    s["table_months_in_order"] = float([r[0] for r in body] == MONTHS and len(body) == len(rows) - 1)
    s["signups_values"] = float([_num(r[1]) for r in body] == SIGNUPS)
    changes = [_num(r[2]) for r in body]
    want = [b - a for a, b in zip(SIGNUPS, SIGNUPS[1:])]
    s["change_values"] = float(
        len(body) == 12 and body[0][2] in ("-", "–", "—", "n/a", "") and changes[1:] == want
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
