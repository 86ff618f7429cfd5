"""task_0036 (file_edit): ACTION lines moved into a final "## Action items" checklist "- [ ] owner: task", in
order; other lines kept.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "notes_exists",
    "action_lines_removed",
    "section_is_last",
    "checklist_items_exact",
    "checklist_order",
    "other_lines_kept",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


ITEMS = [
    "- [ ] Priya: send the revised budget to finance",
    "- [ ] Tom: book the venue for the offsite",
    "- [ ] Priya: draft the hiring plan",
    "- [ ] Lena: fix the broken dashboard link",
]
OTHER = [
    "# Weekly sync, 2026-11-18",
    "Attendees: Priya, Tom, Lena",
    "## Budget",
    "Spending is 4% under plan.",
    "## Offsite",
    "We agreed on the second week of January.",
    "## Hiring",
    "Two open roles: data engineer and designer.",
    "## Tooling",
    "The dashboard link in the wiki is broken.",
]


def _score(ws: Path, s: dict) -> None:
    lines = [line.rstrip() for line in _text(ws / "meeting_notes.md").splitlines()]
    s["notes_exists"] = 1.0
    s["action_lines_removed"] = float(not any(line.startswith("ACTION:") for line in lines))
    heads = [i for i, line in enumerate(lines) if line.startswith("## ")]
    if not heads or lines[heads[-1]] != "## Action items":
        return
    s["section_is_last"] = 1.0
    tail = [line for line in lines[heads[-1] + 1 :] if line.strip()]
    s["checklist_items_exact"] = float(sorted(tail) == sorted(ITEMS))
    s["checklist_order"] = float(tail == ITEMS)
    s["other_lines_kept"] = float([x for x in lines[: heads[-1]] if x.strip()] == OTHER)


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
