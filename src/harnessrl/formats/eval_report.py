"""`eval.json`: one evaluation report (`harnessrl eval`), a JSON object.

    path = write_eval(out_dir, report)    `evaluate.tables.write_report` (beside its `eval.md`)
    report = read_eval(path)              the report page, the ablation's seed table

Its fields are documented where the report is built (`evaluate/run.py`, `evaluate/stats.py`); the
report page shows any object (`report/runs.py`). A file that is not UTF-8, not JSON or not an object
raises `FormatError` naming it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnessrl.formats import read_json_object

EVAL_FILE = "eval.json"


def write_eval(out_dir: Path, report: dict[str, Any]) -> Path:
    """Write `report` to `<out_dir>/eval.json` (keys sorted, indented) and return the path."""
    path = out_dir / EVAL_FILE
    path.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_eval(path: Path) -> dict[str, Any]:
    """The report object in `path`."""
    return read_json_object(path)
