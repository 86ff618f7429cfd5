"""A rollout folder and its `rollout.json`: the Rollout record, split into a head and its calls.

    <rollout_dir>/rollout.json   the Rollout without its calls, plus `n_calls` (status, reward, timings)
    <rollout_dir>/calls.jsonl    its calls (`formats.calls`)

The runner writes the rest of the folder (harness output, workspace, diff, reward: `rollout/artifacts.py`).

    write_rollout(rdir, rollout)       head + calls (the runner; SFT and eval keep what it wrote)
    write_rollout_head(rdir, rollout)  the head alone (the runner, when writing the rest failed)
    read_rollout(rdir)                 the Rollout, calls included (training, SFT, eval, `tree`)
    read_rollout_head(path)            the Rollout without calls, from a folder or its rollout.json

A folder without `calls.jsonl` has the calls its `rollout.json` holds (none, as written here). Every
failure to read raises `FormatError` naming the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harnessrl.formats import FormatError, decode, untrusted_json
from harnessrl.formats.calls import CALLS_FILE, read_calls, write_calls
from harnessrl.formats.untrusted_json import not_json
from harnessrl.types import Rollout

ROLLOUT_FILE = "rollout.json"


def rollout_head(rollout: Rollout) -> dict[str, Any]:
    """The JSON object of `rollout.json`."""
    head = rollout.model_dump(mode="json", exclude={"calls"})
    head["n_calls"] = len(rollout.calls)
    return head


def write_rollout_head(rdir: Path, rollout: Rollout) -> None:
    (rdir / ROLLOUT_FILE).write_text(json.dumps(rollout_head(rollout), indent=2) + "\n", encoding="utf-8")


def write_rollout(rdir: Path, rollout: Rollout) -> None:
    """`rollout.json` and `calls.jsonl` of one rollout into the existing folder `rdir`."""
    write_rollout_head(rdir, rollout)
    write_calls(rdir / CALLS_FILE, rollout.calls)


def is_rollout_dir(path: Path) -> bool:
    return (path / CALLS_FILE).is_file() or (path / ROLLOUT_FILE).is_file()


def read_rollout_head(path: Path, max_bytes: int | None = None) -> Rollout:
    """The Rollout of `path` (a folder or its rollout.json) with the calls the file holds (none when
    written here). `max_bytes`: refuse a bigger file."""
    path = path / ROLLOUT_FILE if path.is_dir() else path
    try:
        if max_bytes is not None and path.stat().st_size > max_bytes:
            raise FormatError(f"{path}: over {max_bytes} bytes")
        data = path.read_bytes()
    except OSError as e:
        raise FormatError(f"{path}: cannot read: {e.strerror}") from None
    try:
        head = untrusted_json.loads(decode(path, data), str(path), keep_surrogates=True)
        if isinstance(head, dict):
            head.pop("n_calls", None)
        return Rollout.model_validate(head)
    except untrusted_json.UntrustedJSONError as e:
        raise FormatError(f"{path}: {not_json(e)}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "<root>"
        raise FormatError(f"{path}: not a Rollout ({where}: {first['msg']})") from None


def read_rollout(rdir: str | Path) -> Rollout:
    """The Rollout of a folder written by `write_rollout`, calls included."""
    rdir = Path(rdir)
    rollout = read_rollout_head(rdir / ROLLOUT_FILE)
    calls_file = rdir / CALLS_FILE
    if calls_file.exists():
        return rollout.model_copy(update={"calls": read_calls(calls_file)})
    return rollout
