"""task_0031 (report_writing): benchmark pivot table (latest run per pair, 1 decimal, "-" for gaps) plus best
model per dataset.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "results_exists",
    "table_header",
    "model_rows",
    "latest_run_used",
    "one_decimal_scores",
    "missing_marked",
    "best_models_exact",
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


TABLE = [
    ["heron-13b", "72.1", "44.1", "68.3"],
    ["kestrel-3b", "40.4", "-", "51.7"],
    ["otter-7b", "61.2", "46.0", "69.4"],
]
BEST = ["- gsm8k: heron-13b (72.1)", "- humaneval: otter-7b (46.0)", "- mmlu: otter-7b (69.4)"]


def _score(ws: Path, s: dict) -> None:
    text = _text(ws / "eval" / "results.md")
    s["results_exists"] = float(bool(text.strip()))
    sec = _sections(text)
    best = [ln.strip() for ln in sec.get("best model per dataset", "").splitlines() if ln.strip()]
    s["best_models_exact"] = float(best == BEST)
    tables = _tables(sec.get("results", ""))
    if not tables:
        return
    rows = tables[0]
    s["table_header"] = float([c.lower() for c in rows[0]] == ["model", "gsm8k", "humaneval", "mmlu"])
    body = [r for r in rows[1:] if len(r) == 4]
    s["model_rows"] = float([r[0] for r in body] == [t[0] for t in TABLE] and len(body) == len(rows) - 1)
    got = {r[0]: r for r in body}
    blank = [""] * 4
    s["latest_run_used"] = float(
        _num(got.get("heron-13b", blank)[1]) == 72.1 and _num(got.get("otter-7b", blank)[2]) == 46.0
    )
    s["one_decimal_scores"] = float(all(got.get(t[0]) == t for t in TABLE))
    s["missing_marked"] = float(got.get("kestrel-3b", blank)[2] in ("-", "–", "—"))


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
