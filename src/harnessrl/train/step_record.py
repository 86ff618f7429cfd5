"""Stage `log` of a training step: its metrics line (one JSON object in `metrics.jsonl`), the console
line that sums it up, and the clock that times its stages.

    clock = StepClock(); ...; clock.lap("trees")
    record = step_record(step, rollouts, batch, trainer_metrics, skip, optimizer_step, weights_version)
    echo(console_line(record, steps))    # step 1/2 | ok 3 harness_error 1 | reward 0.250+-0.433 | ...
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from statistics import fmean, pstdev
from typing import Any

from harnessrl.trace import aggregate_stats
from harnessrl.train.batch import TreeBatch, group_summary
from harnessrl.train.metrics import outcomes
from harnessrl.types import Rollout, RolloutStatus

TREE_KEYS = (
    "calls",
    "retokenized",
    "live_leaves",
    "dead_leaves",
    "over_branching_dropped",
    "tokens_per_call",
    "tokens_paths",
    "tokens_unique",
    "model_tokens_kept",
    "segments_by_kind",
    "rollouts_with_segment",
)
"""Tree statistics (summed over the trained trees of a step) that go into each metrics line."""


def reward_summary(rollouts: Sequence[Rollout]) -> dict[str, Any]:
    """Mean / std / min / max of the rewards of the ok rollouts, overall and per harness."""
    scored = [r for r in rollouts if r.status is RolloutStatus.OK and r.reward is not None]
    values = [float(r.reward) for r in scored if r.reward is not None]
    by_harness: dict[str, list[float]] = defaultdict(list)
    for r in scored:
        by_harness[r.harness].append(float(r.reward or 0.0))
    return {
        "n": len(values),
        "mean": fmean(values) if values else None,
        "std": pstdev(values) if values else None,
        "min": min(values, default=None),
        "max": max(values, default=None),
        "by_harness": {h: fmean(v) for h, v in sorted(by_harness.items())},
    }


def step_record(
    step: int,
    rollouts: Sequence[Rollout],
    batch: TreeBatch,
    trainer_metrics: dict[str, float],
    skip: str | None,
    optimizer_step: int,
    weights_version: int | None,
) -> dict[str, Any]:
    """The metrics line of one step: what its rollouts ended as, what was trained and how."""
    tree = aggregate_stats([t.stats for t in batch.trees])
    groups = group_summary(batch.samples)
    groups["scheduled"] = len({r.group_id for r in rollouts})
    groups["dropped_small"] = batch.small_groups
    return {
        "step": step,
        "optimizer_step": optimizer_step,
        "trained": skip is None,
        "skip_reason": skip,
        "rollouts": len(rollouts),
        "status": dict(sorted(batch.labels.items())),
        "trained_rollouts": len(batch.trees),
        "failures_trained": dict(sorted(batch.failures_trained.items())),
        "trained_by_harness": dict(sorted(Counter(t.harness for t in batch.trees).items())),
        "reward": reward_summary(rollouts),
        "groups": groups,
        "tree": {k: tree.get(k, 0) for k in TREE_KEYS},
        "trainer": trainer_metrics,
        "weights_version": weights_version,
        "outcomes": outcomes(rollouts),
    }


class StepClock:
    """Seconds per named stage of one step, plus the total."""

    def __init__(self) -> None:
        self.t0 = self.last = time.perf_counter()
        self.laps: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps[name] = round(self.laps.get(name, 0.0) + now - self.last, 3)
        self.laps["step"] = round(now - self.t0, 3)
        self.last = now


def console_line(rec: dict[str, Any], steps: int) -> str:
    """`step 1/2 | ok 3/4 harness_error 1 | reward 0.25+-0.43 | ...` (one line per step)."""
    status = " ".join(f"{k} {v}" for k, v in rec["status"].items())
    rw = rec["reward"]
    reward = "reward -" if rw["mean"] is None else f"reward {rw['mean']:.3f}+-{rw['std']:.3f}"
    t = rec["trainer"]
    if rec["trained"]:
        train = (
            f"loss {t.get('loss/total', 0.0):+.4f} grad {t.get('grad_norm', 0.0):.3f} "
            f"mismatch {t.get('mismatch/abs_max', 0.0):.2e} tok {t.get('trained_tokens', 0)}"
        )
    else:
        train = f"skipped ({rec['skip_reason']})"
    times = rec["time"]
    parts = " ".join(f"{k} {times[k]:.1f}" for k in ("rollouts", "trees", "train", "weights") if k in times)
    g = rec["groups"]
    resampled = f", resampled {g['resampled']}" if g.get("resampled") else ""
    return (
        f"step {rec['step'] + 1}/{steps} | {status} | {reward} | groups {g['trained']} "
        f"(zero-var {g['zero_variance']}, informative {g.get('informative', '-')}{resampled}) | {train} | "
        f"{times['step']:.1f}s ({parts})"
    )
