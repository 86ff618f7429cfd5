"""The files a run leaves on disk: one reader and one writer per format, beside the record it holds.

    calls.py         <rollout>/calls.jsonl       one ModelCall per line (also the proxy's capture journal)
    rollout_dir.py   <rollout>/rollout.json      the Rollout without its calls; the rollout folder
                     <rollout>/reward.json       its reward, status and the checker's detail
    first_prompt.py  <rollout>/prompt.json       its harness's first prompt: system and tool digests, tools
    metrics.py       <run>/metrics.jsonl         one record per training step; its flat scalars
    eval_report.py   <eval out_dir>/eval.json    one evaluation report
    stage.py         <experiment>/<stage>/stage.json  an experiment stage's inputs digest, time, result
    summaries.py     <run>/quickstart.json, ablation.json  the quickstart's and the ablation's summaries
    sft.py           <sft out_dir>/sft.json      an SFT run's log and model folder
    checkpoints.py   <run>/checkpoints/step-<n>/ which checkpoint folders are complete; their meta.json
    transfer.py      <run>/transfer.json         a harness-transfer experiment's matrices
    rollout_summary.py  <rollout out_dir>/summary.json  a rollout run's counts per status
    atif.py          <rollout>/trajectory.json   a rollout as Harbor's ATIF v1.8 trajectory (an export)
    untrusted_json.py                            the one decoder for JSON from untrusted bytes (limits)

Everything here is torch-free and imports only `harnessrl.types`, so the trainer, the evaluator, the
report and the command lines read the same bytes the same way. Readers of files that untrusted code
may have touched raise `FormatError` (naming file and line) whatever the bytes.
"""

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harnessrl.formats import untrusted_json
from harnessrl.formats.untrusted_json import not_json
from harnessrl.types import HarnessRLError


class FormatError(HarnessRLError, ValueError):
    """A run file is missing, not UTF-8, or malformed; the message names the file (and line)."""


def decode(path: Path, data: bytes) -> str:
    """`data` as UTF-8, or FormatError naming `path` and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"{path}: not UTF-8 (byte {e.start})") from None


def read_json_object(path: Path) -> dict[str, Any]:
    """The JSON object in `path`, or FormatError naming the file: unreadable, not UTF-8, not JSON
    (with the line), or not an object."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise FormatError(f"{path}: cannot read: {e.strerror}") from None
    try:
        obj = untrusted_json.loads(decode(path, data), str(path), keep_surrogates=True)
    except untrusted_json.UntrustedJSONError as e:
        raise FormatError(f"{path}: {not_json(e)}") from None
    if not isinstance(obj, dict):
        raise FormatError(f"{path}: not a JSON object")
    return obj


def write_json_object(path: Path, obj: Mapping[str, Any], *, sort_keys: bool = False) -> Path:
    """Write `obj` to `path` as indented UTF-8 JSON with a final newline; returns `path`."""
    path.write_text(json.dumps(obj, indent=2, sort_keys=sort_keys) + "\n", encoding="utf-8")
    return path


def require(path: Path, obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], what: str) -> Any:
    """`obj[key]` when it is a `kind` (a bool is never a number here), else FormatError naming the
    file, the field and `what` it should be."""
    value = obj.get(key)
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise FormatError(f"{path}: {key} is not {what}")
    return value


def read_fields(path: Path, fields: Mapping[str, tuple[type | tuple[type, ...], str]]) -> dict[str, Any]:
    """The JSON object in `path` when each named field is of its kind (`require`), in the order given:
    `{key: (kind, what it should be)}`."""
    obj = read_json_object(path)
    for key, (kind, what) in fields.items():
        require(path, obj, key, kind, what)
    return obj


def require_names(path: Path, obj: Mapping[str, Any], key: str) -> list[str]:
    """`obj[key]` when it is a list of strings, else FormatError naming the file and the field."""
    value = require(path, obj, key, list, "a list of names")
    if not all(isinstance(v, str) for v in value):
        raise FormatError(f"{path}: {key} is not a list of names")
    return value


__all__ = ["FormatError", "decode", "read_json_object", "require", "require_names", "write_json_object"]
