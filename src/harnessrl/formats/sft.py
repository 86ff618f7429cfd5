"""`sft.json`: the result of one SFT run (`train.sft.train_sft`), a JSON object.

    write_sft(out_dir, result)   <sft out_dir>/sft.json
    result = read_sft(path)      {log: [{step, nll, grad_norm, heldout_nll}], model, checkpoint, ...}

`log` holds one record per step, `model` the exported model folder the experiments evaluate and train
from. A file that is not UTF-8, not JSON, or without a `log` list and a `model` path raises
`FormatError` naming it and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessrl.formats import read_fields, write_json_object

SFT_FILE = "sft.json"


def write_sft(out_dir: Path, result: dict[str, Any]) -> Path:
    """Write `<out_dir>/sft.json` and return its path."""
    return write_json_object(out_dir / SFT_FILE, result)


def read_sft(path: Path) -> dict[str, Any]:
    """The SFT result in `path` (module docstring)."""
    return read_fields(path, {"log": (list, "a list of step records"), "model": (str, "a model folder")})
