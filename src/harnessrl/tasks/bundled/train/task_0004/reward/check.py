"""task_0004 (warmup): config.json == {"name": "demo", "port": 8080, "debug": false}, with JSON types
checked.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "config_exists",
    "valid_json_object",
    "name_demo",
    "port_int_8080",
    "debug_false",
    "exactly_three_keys",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _score(ws: Path, s: dict) -> None:
    path = ws / "config.json"
    if not path.is_file():
        return
    s["config_exists"] = 1.0
    data = json.loads(_text(path))
    if not isinstance(data, dict):
        return
    s["valid_json_object"] = 1.0
    s["name_demo"] = float(data.get("name") == "demo")
    port = data.get("port")
    s["port_int_8080"] = float(type(port) is int and port == 8080)
    s["debug_false"] = float(data.get("debug") is False)
    s["exactly_three_keys"] = float(sorted(data) == ["debug", "name", "port"])


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
