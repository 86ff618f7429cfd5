"""A rollout folder and its `rollout.json`: the Rollout record, split into a head and its calls.

    <rollout_dir>/rollout.json   the Rollout without its calls, plus `n_calls` (status, reward, timings)
    <rollout_dir>/calls.jsonl    its calls (`formats.calls`)

The runner writes the rest of the folder (harness output, workspace, diff: `rollout/artifacts.py`) and,
through `write_reward`, its `reward.json`:

    <rollout_dir>/reward.json    {reward, status, detail}: the score, the status label, the checker's detail

    write_rollout(rdir, rollout)       head + calls (the runner; SFT and eval keep what it wrote)
    write_rollout_head(rdir, rollout)  the head alone (the runner, when writing the rest failed)
    read_rollout(rdir)                 the Rollout, calls included (training, SFT, eval, `tree`)
    read_rollout_head(path)            the Rollout without calls, from a folder or its rollout.json
    write_reward(rdir, rollout)        reward.json (the runner's artifacts)
    read_reward(rdir)                  its object: `reward` a number or null, `status` a label
    rollout_folders(root)              every rollout folder at or below `root` (every reader that
                                       enumerates rollouts: export, timing, the report, SFT)

A folder without `calls.jsonl` has the calls its `rollout.json` holds (none, as written here). Every
failure to read raises `FormatError` naming the file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from harnessrl.formats import FormatError, decode, read_json_object, require, untrusted_json
from harnessrl.formats.calls import CALLS_FILE, read_calls, write_calls
from harnessrl.formats.untrusted_json import not_json
from harnessrl.types import Rollout

ROLLOUT_FILE = "rollout.json"
REWARD_FILE = "reward.json"
AGENT_FOLDERS = ("workspace", "layer")
"""What the runner keeps of the agent's own files in a rollout folder (its final workspace, and on an
image its writable layer): trees the policy wrote, where it may have planted a `rollout.json`."""
MARKERS = frozenset({ROLLOUT_FILE, CALLS_FILE})
MAX_FOLDERS = 1_000_000
MAX_DEPTH = 32


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


def rollout_step(rid: str) -> int | None:
    """The training step in a rollout id as `train.schedule.rollout_id` writes it (`s<step>-...`);
    None for an id made elsewhere (evaluation, demonstrations, a task folder's name), never an error."""
    head, sep, _ = rid.partition("-")
    digits = head[1:]  # ASCII and bounded: int() refuses "²" and strings past 4,300 digits
    ok = sep and head[:1] == "s" and digits.isascii() and digits.isdigit() and len(digits) <= 18
    return int(digits) if ok else None


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


def write_reward(rdir: Path, rollout: Rollout) -> None:
    """`reward.json` of one rollout: its reward, status label and the checker's detail (values JSON
    cannot hold are written as text)."""
    reward = {"reward": rollout.reward, "status": rollout.status_label, "detail": rollout.reward_detail}
    (rdir / REWARD_FILE).write_text(json.dumps(reward, indent=2, default=str) + "\n", encoding="utf-8")


def read_reward(rdir: str | Path) -> dict[str, Any]:
    """The object of `<rdir>/reward.json`: `reward` a number or null, `status` a label, `detail` an
    object or null; FormatError naming the file and the field otherwise."""
    path = Path(rdir) / REWARD_FILE
    obj = read_json_object(path)
    if obj.get("reward") is not None:
        require(path, obj, "reward", (int, float), "a number or null")
    require(path, obj, "status", str, "a status label")
    if obj.get("detail") is not None:
        require(path, obj, "detail", dict, "an object or null")
    return obj


def rollout_folders(
    root: str | Path, *, max_depth: int = MAX_DEPTH, max_folders: int = MAX_FOLDERS
) -> list[Path]:
    """`root` itself when it is a rollout folder, else every rollout folder below it (sorted): a
    folder holding a regular `rollout.json` or `calls.jsonl`.

    A rollout folder is a leaf, and so is a folder holding one of `AGENT_FOLDERS` (a rollout still
    running, or one whose host died before writing its record): its contents are the agent's, where
    a `workspace/x/rollout.json` (or a tree of them) would count as rollouts of its own. No link is
    followed below `root` (a link to a folder is not entered, a link named `rollout.json` does not
    count). Folders deeper
    than `max_depth` are not looked at; FormatError past `max_folders` folders listed."""
    found: list[Path] = []
    stack, listed = [(Path(root), 0)], 0
    while stack:
        folder, depth = stack.pop()
        listed += 1
        if listed > max_folders:
            raise FormatError(f"{root}: more than {max_folders} folders looked at for rollout folders")
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            continue
        # is_file/is_dir(follow_symlinks=False): a link is neither; False on any error
        if any(e.name in MARKERS and e.is_file(follow_symlinks=False) for e in entries):
            found.append(folder)
            continue
        dirs = [e.name for e in entries if e.is_dir(follow_symlinks=False)]
        if depth < max_depth and not set(dirs) & set(AGENT_FOLDERS):
            stack += [(folder / name, depth + 1) for name in dirs]
    return sorted(found)
