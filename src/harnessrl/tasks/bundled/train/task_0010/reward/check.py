"""task_0010 (file_edit): app/config.json edited in three places (level, cache.enabled, features); all other
values equal; 2-space indent.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "valid_json",
    "logging_level_debug",
    "cache_disabled",
    "features_added",
    "other_values_unchanged",
    "two_space_indent",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


ORIGINAL = {
    "service": "billing",
    "logging": {"level": "info", "file": "/var/log/billing.log", "rotate_days": 14},
    "cache": {"enabled": True, "ttl_seconds": 300, "backend": "redis"},
    "retries": [1, 2, 5],
}


def _score(ws: Path, s: dict) -> None:
    text = _text(ws / "app" / "config.json")
    data = json.loads(text)
    if not isinstance(data, dict):
        return
    s["valid_json"] = 1.0
    logging, cache = data.get("logging"), data.get("cache")
    s["logging_level_debug"] = float(isinstance(logging, dict) and logging.get("level") == "debug")
    s["cache_disabled"] = float(isinstance(cache, dict) and cache.get("enabled") is False)
    s["features_added"] = float(data.get("features") == {"beta_search": True})
    expected = json.loads(json.dumps(ORIGINAL))
    expected["logging"]["level"] = "debug"
    expected["cache"]["enabled"] = False
    got = {k: v for k, v in data.items() if k != "features"}
    s["other_values_unchanged"] = float(got == expected)
    indents = [len(line) - len(line.lstrip(" ")) for line in text.splitlines()]
    s["two_space_indent"] = float(
        2 in indents and all(i % 2 == 0 for i in indents) and "\t" not in text and len(indents) > 5
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
