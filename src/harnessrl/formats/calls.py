"""`calls.jsonl`: one ModelCall per line, in arrival order.

    write_calls(path, calls)     the rollout folder's file, and the proxy's journal rewritten at close
    append_call(path, call)      the proxy's capture journal, one line per recorded or updated call
    read_calls(path)             the one reader (`tree`, `calls show`, training, SFT, eval, report)

The journal appends a call again when it changes (marked partial after it was recorded), so a call
may have several lines: the reader keeps each `call_id` once, at its first line's place, as its last
line has it. A line may also hold a whole rollout (an object with `calls`: a rollout JSONL file), whose
calls are read in order. Blank lines are skipped; a file that is not UTF-8, or a line that is not a
ModelCall (a truncated last line included), raises `FormatError` naming the file and line.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import orjson
from pydantic import ValidationError

from harnessrl.formats import FormatError, decode, untrusted_json
from harnessrl.types import ModelCall

CALLS_FILE = "calls.jsonl"


def call_line(call: ModelCall) -> str:
    """One call as its line of `calls.jsonl`. The prompt ids (tens of thousands of ints; a list, or the
    tuple an open proxy session holds) are written by orjson, the rest by pydantic, and come last:
    0.1 ms for a 25k-token call where pydantic alone took 0.5 ms (a proxy journals every call)."""
    head = call.model_dump_json(exclude={"prompt_ids"})
    return f'{head[:-1]},"prompt_ids":{orjson.dumps(call.prompt_ids).decode()}}}\n'


def write_calls(path: Path, calls: Iterable[ModelCall]) -> None:
    """Write `calls` to `path` in order, replacing it."""
    path.write_text("".join(call_line(c) for c in calls), encoding="utf-8")


def append_call(path: Path, call: ModelCall) -> None:
    """Append one call to `path` and flush (a kill right after loses nothing that was written)."""
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(call_line(call))
        fh.flush()


def _why(err: ValidationError | untrusted_json.UntrustedJSONError) -> str:
    if isinstance(err, untrusted_json.UntrustedJSONError):
        return f"<line>: {err.msg if err.msg is not None else 'JSON ' + err.reason}"
    first = err.errors()[0]
    return f"{'.'.join(str(x) for x in first['loc']) or '<line>'}: {first['msg']}"


def _line_calls(path: Path, n: int, line: str) -> list[ModelCall]:
    try:
        row = untrusted_json.loads(line, "line", keep_surrogates=True)
        rows = row["calls"] if isinstance(row, dict) and isinstance(row.get("calls"), list) else [row]
        return [ModelCall.model_validate(r) for r in rows]
    except (untrusted_json.UntrustedJSONError, ValidationError) as e:
        raise FormatError(f"{path}:{n}: not a ModelCall ({_why(e)})") from None


def read_calls(path: Path) -> list[ModelCall]:
    """Every distinct call of `path`, in order of first appearance (module docstring)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise FormatError(f"{path}: cannot read: {e.strerror}") from None
    by_id: dict[str, ModelCall] = {}
    for n, line in enumerate(decode(path, data).split("\n"), start=1):
        if line.strip():
            for call in _line_calls(path, n, line):
                by_id[call.call_id] = call  # a dict keeps the first insertion's place
    return list(by_id.values())
