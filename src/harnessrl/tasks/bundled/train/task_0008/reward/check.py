"""task_0008 (file_edit): CHANGELOG.md gets a 1.4.0 entry (Added/Fixed bullets) above 1.3.2; title and old
entries byte-identical.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "changelog_exists",
    "new_heading_first",
    "added_bullet",
    "fixed_bullet",
    "bullets_in_right_subsections",
    "old_entries_unchanged",
    "title_kept",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


TITLE = "# Changelog"
OLD = "## [1.3.2] - 2026-10-02\n\n### Fixed\n- Timeout when the upstream API is slow\n\n## [1.3.1] - 2026-09-14\n\n### Changed\n- Default page size is now 50\n"


def _score(ws: Path, s: dict) -> None:
    path = ws / "CHANGELOG.md"
    text = _text(path)
    s["changelog_exists"] = 1.0
    lines = text.splitlines()
    s["title_kept"] = float(bool(lines) and lines[0] == TITLE)
    s["old_entries_unchanged"] = float(text.rstrip().endswith(OLD.rstrip()))
    headings = [line.strip() for line in lines if line.startswith("## ")]
    s["new_heading_first"] = float(headings[:2] == ["## [1.4.0] - 2026-11-20", "## [1.3.2] - 2026-10-02"])
    new = (
        text.split("## [1.4.0] - 2026-11-20", 1)[1].split("## [1.3.2]", 1)[0]
        if s["new_heading_first"]
        else ""
    )
    s["added_bullet"] = float("- CSV export for reports" in new)
    s["fixed_bullet"] = float("- Crash when the config file is empty" in new)
    added = new.split("### Added", 1)[1].split("###", 1)[0] if "### Added" in new else ""
    fixed = new.split("### Fixed", 1)[1].split("###", 1)[0] if "### Fixed" in new else ""
    s["bullets_in_right_subsections"] = float(
        "- CSV export for reports" in added and "- Crash when the config file is empty" in fixed
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
