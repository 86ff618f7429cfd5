"""task_0015 (data_processing): events.jsonl cleaned (invalid/no-id dropped, latest ts per id, sorted by ts)
plus the rejected-line count.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "clean_exists",
    "every_line_object",
    "ids_exact",
    "ids_unique",
    "latest_version_kept",
    "sorted_by_ts",
    "records_unchanged",
    "rejected_count",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


EXPECTED = [
    {"id": "e4", "ts": "2026-11-01T23:59:00Z", "user": "u9", "type": "logout"},
    {"id": "e6", "ts": "2026-11-02T08:00:00Z", "user": "u1", "type": "login"},
    {"id": "e2", "ts": "2026-11-02T09:15:00Z", "user": "u3", "type": "login"},
    {"id": "e1", "ts": "2026-11-02T10:05:00Z", "user": "u7", "type": "login", "retry": True},
    {"id": "e3", "ts": "2026-11-02T11:40:00Z", "user": "u7", "type": "purchase", "amount": 42.5},
    {"id": "e5", "ts": "2026-11-02T12:00:00Z", "user": "u3", "type": "purchase", "amount": 9.99},
]


def _score(ws: Path, s: dict) -> None:
    rej = ws / "clean" / "rejected.txt"
    s["rejected_count"] = float(rej.is_file() and _text(rej).strip() == "2")
    path = ws / "clean" / "events.jsonl"
    if not path.is_file():
        return
    s["clean_exists"] = 1.0
    recs = [json.loads(line) for line in _text(path).splitlines() if line.strip()]
    if not recs or not all(isinstance(r, dict) for r in recs):
        return
    s["every_line_object"] = 1.0
    ids = [r.get("id") for r in recs]
    s["ids_exact"] = float(set(ids) == {e["id"] for e in EXPECTED})
    s["ids_unique"] = float(len(ids) == len(set(ids)))
    by_id = {r.get("id"): r for r in recs}
    s["latest_version_kept"] = float(
        by_id.get("e1", {}).get("retry") is True and by_id.get("e3", {}).get("amount") == 42.5
    )
    ts = [str(r.get("ts")) for r in recs]
    s["sorted_by_ts"] = float(ts == sorted(ts) and len(recs) == len(EXPECTED))
    s["records_unchanged"] = float(recs == EXPECTED)


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
