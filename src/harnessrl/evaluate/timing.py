"""Where a rollout's wall time goes, from what every rollout folder already records.

    rollout_times(rollouts)        pure: Rollouts -> the mean split per harness (below)
    folder_times(root)             the same over every rollout folder under `root` (a train run's
                                   `rollouts/`, an eval's folder, demonstrations)

Per rollout (seconds, from `Rollout.started_at/ended_at`, `timings` and each call's
`started_at/finished_at`, all stamped by the host, never by the sandbox):

    start-up   rollout start -> the harness's first model request (sandbox set-up, harness boot,
               the harness reading its config and tools)
    model      the sum of the model calls as the proxy saw them (engine queue, prefill, decoding)
    harness    the rest of the agent phase: the harness between calls (tool execution, its own
               bookkeeping) and after the last call until it exits
    verify     the checker (`timings.verify`)
    other      the runner outside those (artifacts, tear-down)

plus calls per rollout, prompt and generated tokens per call. A rollout without a call counts
wholly as start-up + harness. Means are over rollouts; `rollouts` is how many.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harnessrl.types import Rollout

PARTS = ("startup", "model", "harness", "verify", "other")


def _split(r: Rollout) -> dict[str, float]:
    total = max(0.0, r.ended_at - r.started_at)
    verify = max(0.0, r.timings.get("verify", 0.0))
    agent = max(0.0, r.timings.get("agent", total - verify))
    stamped = [c for c in r.calls if c.started_at and c.finished_at]
    first = min((c.started_at for c in stamped), default=None)
    startup = agent if first is None else min(agent, max(0.0, first - r.started_at))
    model = min(agent - startup, sum(max(0.0, c.finished_at - c.started_at) for c in stamped))
    return {
        "startup": startup,
        "model": model,
        "harness": max(0.0, agent - startup - model),
        "verify": verify,
        "other": max(0.0, total - agent - verify),
        "total": total,
    }


def rollout_times(rollouts: Iterable[Rollout]) -> dict[str, dict[str, float]]:
    """{harness: {part: mean seconds, "total", "calls", "prompt_tokens", "output_tokens", "rollouts"}}."""
    acc: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for r in rollouts:
        a = acc[r.harness]
        for k, v in _split(r).items():
            a[k] += v
        a["rollouts"] += 1
        a["calls"] += len(r.calls)
        a["prompt_tokens"] += sum(len(c.prompt_ids) for c in r.calls)
        a["output_tokens"] += sum(len(c.output_ids) for c in r.calls)
    out: dict[str, dict[str, float]] = {}
    for h, a in sorted(acc.items()):
        n = a["rollouts"]
        row = {k: round(a[k] / n, 3) for k in (*PARTS, "total", "calls")}
        per_call = max(a["calls"], 1)
        row |= {k: round(a[k] / per_call, 1) for k in ("prompt_tokens", "output_tokens")}
        out[h] = row | {"rollouts": int(n)}
    return out


def folder_times(root: str | Path) -> dict[str, dict[str, float]]:
    """`rollout_times` over every rollout folder under `root` (unreadable ones are skipped)."""
    from harnessrl.formats import FormatError
    from harnessrl.formats.rollout_dir import read_rollout, rollout_folders

    rollouts: list[Rollout] = []
    for rdir in rollout_folders(root):
        try:
            rollouts.append(read_rollout(rdir))
        except FormatError:
            continue
    return rollout_times(rollouts)


def times_markdown(times: dict[str, dict[str, Any]]) -> str:
    """One row per harness: mean seconds per part, calls and tokens per call."""
    lines = [
        "| harness | rollouts | total s | start-up | model calls | harness | verify | other | calls | "
        "prompt tok/call | generated tok/call |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for h, t in times.items():
        parts = " | ".join(f"{t[p]:.2f}" for p in PARTS)
        lines.append(
            f"| {h} | {t['rollouts']} | {t['total']:.2f} | {parts} | {t['calls']:.1f} | "
            f"{t['prompt_tokens']:.0f} | {t['output_tokens']:.1f} |"
        )
    return "\n".join(lines) + "\n"
