"""task_0018 (data_processing): stats.json from an access log: totals, unique IPs, status counts, top path
(query stripped), bytes, 5xx rate.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "stats_is_object",
    "total_requests",
    "unique_ips",
    "status_counts",
    "top_path",
    "top_path_hits",
    "bytes_sent",
    "server_error_rate",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


STATUS = {"200": 8, "401": 1, "500": 1, "404": 1, "503": 1, "304": 1, "204": 1}


def _score(ws: Path, s: dict) -> None:
    data = json.loads(_text(ws / "stats.json"))
    if not isinstance(data, dict):
        return
    s["stats_is_object"] = 1.0
    s["total_requests"] = float(data.get("total_requests") == 14)
    s["unique_ips"] = float(data.get("unique_ips") == 5)
    s["status_counts"] = float(data.get("status_counts") == STATUS)
    s["top_path"] = float(data.get("top_path") == "/api/items")
    s["top_path_hits"] = float(data.get("top_path_hits") == 5)
    s["bytes_sent"] = float(data.get("bytes_sent") == 11455)
    rate = data.get("server_error_rate")
    s["server_error_rate"] = float(isinstance(rate, (int, float)) and rate == 0.143)


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
