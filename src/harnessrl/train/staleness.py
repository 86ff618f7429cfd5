"""Staleness of rollouts under asynchronous training: how many policy versions behind the trainer.

A rollout's version is the oldest `ModelCall.weights_version` among its calls (a rollout whose calls
straddle a weight update is as old as its first call). Its staleness, when trained, is the engine's
current version (the trainer's weights: every optimizer step is handed to the engine before the next
one) minus that. Calls without a version (an engine that reports none, a call that failed before
sampling) are ignored; a rollout with no versioned call has unknown staleness and is never dropped.

`train.max_off_policy_steps` bounds it. The rollout producer already starts a step only when its
calls cannot be older than the bound (`rollout.producer`), so the check below is the guard for what
it cannot see (an engine restarted or updated from elsewhere, a version jump): an `ok` rollout over
the bound is dropped as `filtered:stale` (`train.stale_rollouts = "drop"`) or kept
(`"keep"`): its tokens are then corrected exactly like any other, by the truncated importance weight
exp(logp_old - logp_rollout) on the sampling log-probs the calls recorded. Rollouts that already
failed keep their own status (the first failure wins).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any, Literal

from harnessrl.types import Rollout, RolloutStatus

STALE = "stale"
"""The filter reason of a rollout over the bound (status label `filtered:stale`)."""


def rollout_version(rollout: Rollout) -> int | None:
    """The oldest policy version any of the rollout's calls was sampled with (None: no versioned call)."""
    versions = [c.weights_version for c in rollout.calls if c.weights_version is not None]
    return min(versions) if versions else None


def staleness(rollout: Rollout, current: int | None) -> int | None:
    """Policy versions between the rollout's oldest call and `current` (None when either is unknown)."""
    version = rollout_version(rollout)
    if version is None or current is None:
        return None
    return max(0, current - version)


@dataclass
class StalenessReport:
    """Staleness of one step's rollouts: per rollout, and how many the bound dropped."""

    bound: int
    policy: str
    by_rollout: dict[str, int | None] = field(default_factory=dict)
    dropped: int = 0

    def summary(self, trained: Iterable[str]) -> dict[str, Any]:
        """The step's metrics: max / mean / counts over every rollout, and each trained rollout's."""
        known = [s for s in self.by_rollout.values() if s is not None]
        counts = Counter(str(s) for s in known)
        return {
            "bound": self.bound,
            "policy": self.policy,
            "max": max(known, default=None),
            "mean": fmean(known) if known else None,
            "counts": dict(sorted(counts.items(), key=lambda kv: int(kv[0]))),
            "unknown": len(self.by_rollout) - len(known),
            "dropped": self.dropped,
            "trained": {rid: self.by_rollout.get(rid) for rid in sorted(trained)},
        }


def apply_bound(
    rollouts: Sequence[Rollout],
    current: int | None,
    bound: int,
    policy: Literal["drop", "keep"],
    failure_statuses: Collection[str] = (),
) -> tuple[list[Rollout], StalenessReport]:
    """Each rollout's staleness against `current`; with `drop`, every rollout over `bound` that could
    be trained becomes a `filtered:stale` copy: `ok` ones, and the failures the policy caused whose
    status is in `failure_statuses` (`train.failures.train_statuses`: trained with reward 0). The
    others are returned as they are."""
    report = StalenessReport(bound=bound, policy=policy)
    out: list[Rollout] = []
    for r in rollouts:
        s = staleness(r, current)
        report.by_rollout[r.rollout_id] = s
        trainable = r.status is RolloutStatus.OK or (
            r.fault == "policy" and r.status.value in failure_statuses
        )
        if policy == "drop" and s is not None and s > bound and trainable:
            r = r.model_copy(update={"status": RolloutStatus.FILTERED, "status_reason": STALE})
            report.dropped += 1
        out.append(r)
    return out, report
