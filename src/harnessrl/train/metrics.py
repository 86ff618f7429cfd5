"""What a training step measured: the `outcomes` section of its metrics line, the flat scalars that
TensorBoard and `harnessrl plot` draw, and the sink that writes both.

    record["outcomes"] = outcomes(rollouts)          # pass rate, reward per harness kind, tokens, seconds
    sink = MetricsSink(out_dir, cfg.tracking)        # <out_dir>/metrics.jsonl + <out_dir>/tb/events.*
    sink.write(record)

Scalars: `formats.metrics.scalars` (the tags are listed there).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from harnessrl.formats.metrics import METRICS_FILE, append_metrics
from harnessrl.formats.metrics import scalars as scalars  # its home before
from harnessrl.types import WORKER_LOST, HarnessName, Rollout, RolloutStatus

PASS_THRESHOLD = 1.0
"""A rollout passes at this reward or above (the eval's default `pass_threshold`)."""


def harness_kind(harness: str) -> str:
    """`whitebox:01220` -> `whitebox`; `claude-code` -> `claude-code`."""
    try:
        return HarnessName.parse(harness).family
    except ValueError:
        return harness


def _mean_std(values: Sequence[float]) -> dict[str, Any]:
    return {
        "n": len(values),
        "mean": fmean(values) if values else None,
        "std": pstdev(values) if values else None,
    }


def outcomes(rollouts: Sequence[Rollout], pass_threshold: float = PASS_THRESHOLD) -> dict[str, Any]:
    """Pass rate, reward per harness kind, within-group spread, sampled tokens and phase seconds."""
    ok = [r for r in rollouts if r.status is RolloutStatus.OK and r.reward is not None]
    by_kind: dict[str, list[float]] = defaultdict(list)
    by_group: dict[str, list[float]] = defaultdict(list)
    for r in ok:
        by_kind[harness_kind(r.harness)].append(float(r.reward or 0.0))
        by_group[r.group_id].append(float(r.reward or 0.0))
    spreads = [pstdev(v) for v in by_group.values() if len(v) >= 2]
    calls = [c for r in rollouts for c in r.calls]
    passed = sum(1 for r in ok if float(r.reward or 0.0) >= pass_threshold)
    return {
        "passed": passed,
        "pass_rate": passed / len(rollouts) if rollouts else None,
        "pass_threshold": pass_threshold,
        "reward_by_kind": {k: _mean_std(v) for k, v in sorted(by_kind.items())},
        "group_reward_std": fmean(spreads) if spreads else None,
        "calls": len(calls),
        "tokens_sampled": sum(len(c.output_ids) for c in calls),
        "tokens_per_call_mean": fmean([len(c.prompt_ids) + len(c.output_ids) for c in calls])
        if calls
        else None,
        "seconds": {
            phase: round(sum(r.timings.get(phase, 0.0) for r in rollouts), 3) for phase in ("agent", "verify")
        },
        "workers": workers(rollouts),
    }


def workers(rollouts: Sequence[Rollout]) -> dict[str, Any]:
    """Where the rollouts ran and what the rollout workers lost: rollouts per node (Ray backend),
    extra tries after a worker died, rollouts lost with their last worker, folders not found."""
    return {
        "by_node": dict(sorted(Counter(r.node for r in rollouts if r.node).items())),
        "retried": sum(r.attempts - 1 for r in rollouts),
        "lost": sum(
            1
            for r in rollouts
            if r.status is RolloutStatus.SANDBOX_ERROR and r.status_reason.startswith(WORKER_LOST)
        ),
        "artifacts_missing": sum(1 for r in rollouts if r.artifacts_missing),
    }


class MetricsSink:
    """Appends each step's record to `<out_dir>/metrics.jsonl` and its scalars to the run's trackers
    (`report.trackers`): TensorBoard event files under `<out_dir>/tb` (no extra dependency), with the
    run's config as a text, plus `tracking.report_to` (a `config.TrackingConfig`; None: TensorBoard
    only). The trackers open on `open()` or the first write and close on `close()`."""

    def __init__(
        self, out_dir: str | Path, tracking: Any = None, config: Mapping[str, Any] | None = None
    ) -> None:
        self.out_dir = Path(out_dir)
        self.path = self.out_dir / METRICS_FILE
        self.tracking, self.config = tracking, config
        self.trackers: Any = None

    def open(self) -> None:
        from harnessrl.report.trackers import open_trackers

        if self.trackers is None:
            self.trackers = open_trackers(self.out_dir, self.tracking, kind="train", config=self.config)

    def write(self, record: Mapping[str, Any]) -> None:
        append_metrics(self.path, record)
        self.open()
        self.trackers.scalars(int(record["step"]), scalars(record))

    def close(self) -> None:
        if self.trackers is not None:
            self.trackers.close()
            self.trackers = None
