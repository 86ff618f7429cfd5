"""`stage.json`: what one stage of an experiment left (`experiments.stages.Stages`), a JSON object.

    write_stage(folder, StageRecord(inputs=digest, seconds=12.5, result={...}))
    record = read_stage(folder / STAGE_FILE)

`inputs` is the sha256 (hex) of the stage's inputs, `seconds` how long it ran, `result` whatever JSON
the stage returned. A stage whose file reads back with the same digest is reused; a file that is not
UTF-8, not JSON, or lacks a field of the right type raises `FormatError` naming it (the stage then runs
again).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harnessrl.formats import FormatError, read_json_object, require, write_json_object

STAGE_FILE = "stage.json"


@dataclass(frozen=True)
class StageRecord:
    inputs: str
    """sha256 (hex) of the stage's inputs."""
    seconds: float
    """Wall seconds the stage took when it ran."""
    result: Any
    """What the stage returned (any JSON value)."""


def write_stage(folder: Path, record: StageRecord) -> Path:
    """Write `<folder>/stage.json` and return its path."""
    obj = {"inputs": record.inputs, "seconds": record.seconds, "result": record.result}
    return write_json_object(folder / STAGE_FILE, obj)


def read_stage(path: Path) -> StageRecord:
    """The record in `path` (module docstring)."""
    obj = read_json_object(path)
    if "result" not in obj:
        raise FormatError(f"{path}: no result")
    inputs = require(path, obj, "inputs", str, "an inputs digest")
    seconds = require(path, obj, "seconds", (int, float), "a number of seconds")
    return StageRecord(inputs, float(seconds), obj["result"])
