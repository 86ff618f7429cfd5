"""Read a rollout's calls from disk: a rollout directory or a bare calls JSONL file.

Rollout directory layout: `calls.jsonl` (one ModelCall JSON per line) and, optionally, `rollout.json`
(the Rollout: reward, status, group; its own `calls` are used when there is no `calls.jsonl`).
Blank lines are skipped; any other line that is not a valid ModelCall is an error naming the line.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from harnessrl.types import HarnessRLError, ModelCall, Rollout


class TraceInputError(HarnessRLError):
    """A rollout directory or calls file is missing or malformed; the message names file and line."""


def read_calls(path: Path) -> list[ModelCall]:
    """Every ModelCall of a JSONL file, in file order."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise TraceInputError(f"{path}: cannot read: {e.strerror}") from None
    calls: list[ModelCall] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            calls.append(ModelCall.model_validate_json(line))
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(x) for x in first["loc"]) or "<line>"
            raise TraceInputError(f"{path}:{n}: not a ModelCall ({where}: {first['msg']})") from None
    return calls


def load_rollout(path: str | Path) -> Rollout:
    """A Rollout from a rollout directory or a calls JSONL file (then id and task come from the calls)."""
    p = Path(path)
    if p.is_dir():
        meta = p / "rollout.json"
        rollout: Rollout | None = None
        if meta.is_file():
            try:
                rollout = Rollout.model_validate_json(meta.read_text(encoding="utf-8"))
            except ValidationError as e:
                raise TraceInputError(f"{meta}: not a Rollout: {e.errors()[0]['msg']}") from None
        calls_file = p / "calls.jsonl"
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
