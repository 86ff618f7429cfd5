"""`summary.json`: the counts of one `harnessrl rollout` run, a JSON object beside its rollout folders.

    summary = summarize(rollouts)     {rollouts, status: {label: count}, mean_reward_ok, calls, output_tokens}
    write_summary(out_dir, summary)   <rollout out_dir>/summary.json  (`commands.rollout`)
    summary = read_summary(path)

`status` counts rollouts per status label (`ok`, `timeout`, ..., `filtered:<reason>`),
`mean_reward_ok` is the mean reward over ok rollouts (null when none has one), `calls` and
`output_tokens` add up over all rollouts. A file that is not UTF-8, not JSON, or whose fields are not
of these kinds raises `FormatError` naming it and the field.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harnessrl.formats import FormatError, read_json_object, require, write_json_object
from harnessrl.types import Rollout, RolloutStatus

SUMMARY_FILE = "summary.json"


def summarize(rollouts: Sequence[Rollout]) -> dict[str, Any]:
    """Counts per status label, mean reward over ok rollouts, calls and tokens (for logs and tables)."""
    counts: dict[str, int] = {}
    for r in rollouts:
        counts[r.status_label] = counts.get(r.status_label, 0) + 1
    ok = [r.reward for r in rollouts if r.status is RolloutStatus.OK and r.reward is not None]
    return {
        "rollouts": len(rollouts),
        "status": counts,
        "mean_reward_ok": sum(ok) / len(ok) if ok else None,
        "calls": sum(len(r.calls) for r in rollouts),
        "output_tokens": sum(len(c.output_ids) for r in rollouts for c in r.calls),
    }


def write_summary(out_dir: Path, summary: dict[str, Any]) -> Path:
    """Write `<out_dir>/summary.json` and return its path."""
    return write_json_object(out_dir / SUMMARY_FILE, summary)


def read_summary(path: Path) -> dict[str, Any]:
    """The rollout summary in `path` (module docstring)."""
    summary = read_json_object(path)
    for key in ("rollouts", "calls", "output_tokens"):
        require(path, summary, key, int, "a count")
    counts = require(path, summary, "status", dict, "an object of counts per status")
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in counts.values()):
        raise FormatError(f"{path}: status is not an object of counts per status")
    require(path, summary, "mean_reward_ok", (int, float, type(None)), "a number or null")
    return summary
