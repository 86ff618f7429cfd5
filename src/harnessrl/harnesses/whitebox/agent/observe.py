"""Factor 3, the observation: raw output / head+tail truncation to a byte budget / structured JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass

LEVELS = ("raw", "truncated", "json")


@dataclass
class CommandOutcome:
    """What one action did."""

    exit_code: int
    stdout: str
    stderr: str
    elapsed_s: float


def raw(o: CommandOutcome, budget: int) -> str:
    return o.stdout + o.stderr


def truncated(o: CommandOutcome, budget: int) -> str:
    """Combined output cut to `budget` bytes, head and tail kept, the cut marked; exit code last."""
    data = (o.stdout + o.stderr).encode()
    if len(data) > budget:
        half = budget // 2
        cut = len(data) - 2 * half
        head = data[:half].decode("utf-8", "ignore")
        tail = data[-half:].decode("utf-8", "ignore")
        text = f"{head}\n[... {cut} bytes elided ...]\n{tail}"
    else:
        text = data.decode("utf-8", "ignore")
    return f"{text}\n[exit code {o.exit_code}]"


def structured(o: CommandOutcome, budget: int) -> str:
    fields = {"exit_code": o.exit_code, "stdout": o.stdout, "stderr": o.stderr}
    return json.dumps({**fields, "elapsed_s": round(o.elapsed_s, 3)})


RENDER = {"raw": raw, "truncated": truncated, "json": structured}
