"""task_0002 (warmup): draft_report.md renamed to report_final.md with identical bytes; no leftover copy."""

import json
import sys
from pathlib import Path

KEYS = ("final_exists", "draft_gone", "content_unchanged", "no_extra_markdown")


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


CONTENT = "# Q3 field report\n\nWe visited 14 sites and logged 212 observations.\n\n- Site 7 needs a new gate.\n- Site 11 flooded twice.\n"


def _score(ws: Path, s: dict) -> None:
    final = ws / "report_final.md"
    s["draft_gone"] = float(not (ws / "draft_report.md").exists())
    md = sorted(p.name for p in ws.glob("*.md"))
    s["no_extra_markdown"] = float(md == ["report_final.md"])
    if not final.is_file():
        return
    s["final_exists"] = 1.0
    s["content_unchanged"] = float(_text(final) == CONTENT)


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
