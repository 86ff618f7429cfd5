"""task_0007 (file_edit): settings.ini [server] port=9090, workers=4 added in [server]; [database] and
comments unchanged.
"""

import configparser
import json
import sys
from pathlib import Path

KEYS = (
    "ini_parses",
    "server_port_9090",
    "server_workers_4",
    "database_unchanged",
    "comments_kept",
    "other_server_keys_kept",
    "no_new_sections",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


COMMENTS = [
    "# Service configuration, edited by ops only",
    "; ports below 1024 need root",
    "# database credentials live in the vault",
]
DATABASE = {"host": "db.internal", "port": "5432", "name": "orders"}


def _score(ws: Path, s: dict) -> None:
    path = ws / "settings.ini"
    text = _text(path)
    lines = [line.strip() for line in text.splitlines()]
    s["comments_kept"] = float(all(c in lines for c in COMMENTS))
    cfg = configparser.ConfigParser()
    cfg.read_string(text)
    s["ini_parses"] = 1.0
    if cfg.has_section("server"):
        server = dict(cfg["server"])
        s["server_port_9090"] = float(server.get("port") == "9090")
        s["server_workers_4"] = float(server.get("workers") == "4")
        s["other_server_keys_kept"] = float(server.get("host") == "0.0.0.0" and server.get("timeout") == "30")
    if cfg.has_section("database"):
        s["database_unchanged"] = float(dict(cfg["database"]) == DATABASE)
    s["no_new_sections"] = float(cfg.sections() == ["server", "database"] and s["server_workers_4"] == 1.0)


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
