"""task_0022 (data_processing): currency conversion by division, per-account EUR totals, flagged ids strictly
above 1000 EUR.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "totals_is_object",
    "accounts_exact",
    "totals_correct",
    "totals_rounded",
    "flagged_exists",
    "flagged_ids_exact",
    "boundary_excluded",
    "flagged_sorted",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


TOTALS = {"ACC-A": 1805.56, "ACC-B": 2978.46, "ACC-C": 2068.52}
FLAGGED = ["T-002", "T-006", "T-008"]


def _score(ws: Path, s: dict) -> None:
    flagged = ws / "out" / "flagged.txt"
    if flagged.is_file():
        s["flagged_exists"] = 1.0
        ids = [line.strip() for line in _text(flagged).splitlines() if line.strip()]
        s["flagged_ids_exact"] = float(sorted(ids) == FLAGGED)
        s["boundary_excluded"] = float("T-004" not in ids and "T-007" not in ids and bool(ids))
        s["flagged_sorted"] = float(ids == FLAGGED)
    data = json.loads(_text(ws / "out" / "eur_totals.json"))
    if not isinstance(data, dict):
        return
    s["totals_is_object"] = 1.0
    s["accounts_exact"] = float(sorted(data) == sorted(TOTALS))
    nums = [v for v in data.values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    s["totals_correct"] = float(
        all(isinstance(data.get(k), (int, float)) and abs(data[k] - v) < 0.011 for k, v in TOTALS.items())
    )
    s["totals_rounded"] = float(bool(nums) and len(nums) == len(data) and all(round(v, 2) == v for v in nums))


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
