"""Read a rollout's calls from disk: a rollout directory or a bare calls JSONL file.

Rollout directory layout (`formats/rollout_dir.py`): `calls.jsonl` (one ModelCall JSON per line) and,
optionally, `rollout.json` (the Rollout: reward, status, group; its own `calls` are used when there is
no `calls.jsonl`). The files are read by `harnessrl.formats` (one reader per format); any failure is a
`TraceInputError` naming the file and line.
"""

from __future__ import annotations

from pathlib import Path

from harnessrl.formats import FormatError
from harnessrl.formats.calls import CALLS_FILE, read_calls
from harnessrl.formats.rollout_dir import ROLLOUT_FILE, read_rollout_head
from harnessrl.types import HarnessRLError, Rollout


class TraceInputError(HarnessRLError):
    """A rollout directory or calls file is missing or malformed; the message names file and line."""


def _load(p: Path) -> Rollout:
    if p.is_dir():
        meta = p / ROLLOUT_FILE
        rollout = read_rollout_head(meta) if meta.is_file() else None
        calls_file = p / CALLS_FILE
        if calls_file.is_file():
            calls = read_calls(calls_file)
        elif rollout is not None:
            calls = rollout.calls
        else:
            raise TraceInputError(f"{p}: no calls.jsonl (and no rollout.json)")
        if rollout is None:
            rollout = Rollout(rollout_id=calls[0].rollout_id if calls else p.name, task_id="", harness="")
        return rollout.model_copy(update={"calls": calls})
    if p.is_file():
        calls = read_calls(p)
        rid = calls[0].rollout_id if calls else p.stem
        return Rollout(rollout_id=rid, task_id="", harness="", calls=calls)
    raise TraceInputError(f"{p}: no such rollout directory or calls file")


def load_rollout(path: str | Path) -> Rollout:
    """A Rollout from a rollout directory or a calls JSONL file (then id and task come from the calls)."""
    try:
        return _load(Path(path))
    except FormatError as e:
        raise TraceInputError(str(e)) from None
