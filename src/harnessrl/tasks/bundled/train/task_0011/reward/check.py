"""task_0011 (file_edit): docs/guide.md TOC rebuilt: one "- [H](#anchor)" per later "## " heading, in order,
GitHub anchors; body unchanged.
"""

import json
import re
import sys
from pathlib import Path

KEYS = (
    "guide_exists",
    "toc_entry_count",
    "toc_order",
    "toc_anchors_github",
    "toc_format",
    "body_unchanged",
    "stale_entry_removed",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


HEADINGS = ["Installing", "First run", "Configuring the CLI", "Upgrading from v1.x", "FAQ & troubleshooting"]
ANCHORS = ["installing", "first-run", "configuring-the-cli", "upgrading-from-v1x", "faq--troubleshooting"]
BODY_MARK = "## Installing"
BODY = "## Installing\n\nRun the installer and accept the defaults.\n\n## First run\n\nStart `tidewatch init` and pick a station.\n\n## Configuring the CLI\n\nSettings live in `~/.tidewatch.toml`.\n\n## Upgrading from v1.x\n\nExport your stations first: `tidewatch export`.\n\n## FAQ & troubleshooting\n\nIf readings stop, check the gauge battery.\n"


def _score(ws: Path, s: dict) -> None:
    text = _text(ws / "docs" / "guide.md")
    s["guide_exists"] = 1.0
    s["body_unchanged"] = float(BODY_MARK in text and text[text.index(BODY_MARK) :] == BODY)
    head = text.split("## Contents", 1)[1].split(BODY_MARK, 1)[0] if "## Contents" in text else ""
    entries = [line.strip() for line in head.splitlines() if line.strip()]
    parsed = [re.fullmatch(r"- \[(.+)\]\(#([^)]*)\)", e) for e in entries]
    s["toc_format"] = float(bool(entries) and all(parsed))
    ok = [m for m in parsed if m]
    s["toc_entry_count"] = float(len(entries) == len(HEADINGS))
    s["toc_order"] = float([m.group(1) for m in ok] == HEADINGS)
    s["toc_anchors_github"] = float([m.group(2) for m in ok] == ANCHORS)
    s["stale_entry_removed"] = float(bool(entries) and not any("Legacy" in e for e in entries))


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
