"""task_0014 (data_processing): revenue per region from data/sales.csv (rounded, sorted keys) and the top
product by units.
"""

import json
import sys
from pathlib import Path

KEYS = (
    "revenue_file_exists",
    "revenue_is_object",
    "regions_exact",
    "totals_correct",
    "totals_rounded",
    "keys_sorted",
    "top_product_correct",
)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


EXPECTED = {"East": 889.2, "North": 720.82, "South": 612.22, "West": 705.4}


def _score(ws: Path, s: dict) -> None:
    top = ws / "out" / "top_product.txt"
    s["top_product_correct"] = float(top.is_file() and _text(top).strip() == "chair")
    path = ws / "out" / "revenue_by_region.json"
    if not path.is_file():
        return
    s["revenue_file_exists"] = 1.0
    data = json.loads(_text(path))
    if not isinstance(data, dict):
        return
    s["revenue_is_object"] = 1.0
    s["regions_exact"] = float(sorted(data) == sorted(EXPECTED))
    nums = {k: v for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    s["totals_correct"] = float(
        len(nums) == len(EXPECTED) and all(abs(nums.get(k, -1e9) - v) < 0.006 for k, v in EXPECTED.items())
    )
    s["totals_rounded"] = float(bool(nums) and all(round(v, 2) == v for v in nums.values()))
    s["keys_sorted"] = float(list(data) == sorted(EXPECTED))


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
