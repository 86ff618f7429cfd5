"""`transfer.json`: the summary of a harness-transfer run (`scripts/harness_transfer`), a JSON object.

    path = write_transfer(out_dir, summary)   `experiments.transfer.run_transfer` (beside transfer.md)
    summary = read_transfer(path)             the report page's heat map

Its fields are documented where it is built (`experiments/transfer.py`); what the reader checks is what
the heat map needs: `eval_harnesses` (a list of names) and `matrix` ({group: {policy: {harness: cell}}},
a cell an object whose `pass1` is a number or null). A file that is not UTF-8, not JSON or not of
that shape raises `FormatError` naming it and the field.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harnessrl.formats import FormatError, read_json_object

TRANSFER_FILE = "transfer.json"


def write_transfer(out_dir: Path, summary: dict[str, Any]) -> Path:
    """Write `summary` to `<out_dir>/transfer.json` (indented) and return the path."""
    path = out_dir / TRANSFER_FILE
    path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return path


def read_transfer(path: Path) -> dict[str, Any]:
    """The summary object in `path`, its matrix checked (module docstring)."""
    summary = read_json_object(path)
    harnesses = summary.get("eval_harnesses")
    if not isinstance(harnesses, list) or not all(isinstance(h, str) for h in harnesses):
        raise FormatError(f"{path}: eval_harnesses is not a list of harness names")
    matrix = summary.get("matrix")
    if not isinstance(matrix, dict):
        raise FormatError(f"{path}: matrix is not an object of task groups")
    for group, rows in matrix.items():
        if not isinstance(rows, dict):
            raise FormatError(f"{path}: matrix.{group} is not an object of policies")
        for policy, cells in rows.items():
            if not isinstance(cells, dict) or not all(isinstance(cells.get(h), dict) for h in harnesses):
                raise FormatError(f"{path}: matrix.{group}.{policy} lacks a cell per evaluation harness")
            for h in harnesses:
                p = cells[h].get("pass1")
                if p is not None and (isinstance(p, bool) or not isinstance(p, int | float)):
                    raise FormatError(f"{path}: matrix.{group}.{policy}.{h}.pass1 is not a number")
    return summary
