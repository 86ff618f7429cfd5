"""Which checkpoint folders are complete: `<root>/step-<n>/` with `meta.json` and `state.pt`.

The trainer writes them (`train/checkpoint.py`, torch); the evaluator, the experiments and resume only
need to find the newest complete one, without importing torch.

    write_checkpoint_meta(folder, step, data_position)   <folder>/meta.json (the trainer, last)
    meta = read_checkpoint_meta(folder)                  {step, data_position[, sharded_ranks]}

`meta.json` says which optimizer step and loop position the folder holds (and, for a sharded
checkpoint, how many ranks wrote it). A file that is not UTF-8, not JSON, or whose fields are not
integers raises `FormatError` naming it and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harnessrl.formats import read_json_object, require, write_json_object

META_FILE = "meta.json"


def complete_checkpoints(root: str | Path) -> list[Path]:
    """The fully written `step-<n>/` folders under `root`, oldest first ([] if `root` is missing)."""
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("step-*") if (p / META_FILE).is_file() and (p / "state.pt").is_file())


def latest_checkpoint(root: str | Path) -> Path | None:
    """The complete checkpoint with the highest step under `root`, or None."""
    done = complete_checkpoints(root)
    return done[-1] if done else None


def write_checkpoint_meta(
    folder: Path, step: int, data_position: int, sharded_ranks: int | None = None
) -> Path:
    """Write `<folder>/meta.json` and return its path."""
    meta: dict[str, Any] = {"step": step, "data_position": data_position}
    if sharded_ranks is not None:
        meta["sharded_ranks"] = sharded_ranks
    return write_json_object(folder / META_FILE, meta)


def read_checkpoint_meta(folder: Path) -> dict[str, int]:
    """`{step, data_position}` (and `sharded_ranks` when a sharded save wrote it) of a checkpoint folder."""
    path = folder / META_FILE
    obj = read_json_object(path)
    keys = ["step", "data_position", *(["sharded_ranks"] if "sharded_ranks" in obj else [])]
    return {k: require(path, obj, k, int, "an integer") for k in keys}
