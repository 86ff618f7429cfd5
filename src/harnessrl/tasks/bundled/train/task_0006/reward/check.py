"""task_0006 (warmup): every cache/**/*.tmp deleted; the other cache files and the folders remain with their
content.
"""

import json
import sys
from pathlib import Path

KEYS = ("top_level_tmp_gone", "nested_tmp_gone", "other_files_kept", "folders_kept")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


KEEP = {
    "cache/index.json": '{"entries": 3}\n',
    "cache/img/logo.png.meta": "w=64 h=64\n",
    "cache/tmpl/page.html": "<p>hi</p>\n",
}


def _score(ws: Path, s: dict) -> None:
    cache = ws / "cache"
    tmps = [p for p in cache.rglob("*.tmp")] if cache.is_dir() else []
    s["top_level_tmp_gone"] = float(cache.is_dir() and not any(p.parent == cache for p in tmps))
    s["nested_tmp_gone"] = float(cache.is_dir() and not any(p.parent != cache for p in tmps))
    s["other_files_kept"] = float(all((ws / k).is_file() and _text(ws / k) == v for k, v in KEEP.items()))
    s["folders_kept"] = float(all((cache / d).is_dir() for d in ("img", "tmpl", "sessions")))


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
