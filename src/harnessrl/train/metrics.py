"""What a training step measured: the `outcomes` section of its metrics line, the flat scalars that
TensorBoard and `harnessrl plot` draw, and the sink that writes both.

    record["outcomes"] = outcomes(rollouts)          # pass rate, reward per harness kind, tokens, seconds
    sink = MetricsSink(out_dir)                      # <out_dir>/metrics.jsonl + <out_dir>/tb/events.*
    sink.write(record)

Scalars (`scalars(record)`; every tag a name that stays the same from step to step):

    reward/mean, reward/std, reward/<kind>/mean, reward/<kind>/std    ok rollouts; kind = harness family
                                                                      (`whitebox:01220` -> `whitebox`)
    reward/group_std                   mean within-group reward std over groups with >= 2 ok rollouts
    pass_rate                          passed / scheduled rollouts (a non-ok rollout counts as failed)
    groups/trained, groups/zero_variance
    tokens/per_call, tokens/unique, tokens/trained, tokens/sampled, tokens/per_call_mean
    tokens/dedup_ratio                 per-call tokens / unique tree tokens (what tree packing saves)
    status/<label>                     rollouts per status label: ok, timeout, filtered:<reason>, ...
    mismatch/abs_mean, mismatch/abs_max, mismatch/frac_truncated (TIS truncation fraction), tis/mean,
    entropy, kl/k3, grad_norm, loss/total, lr                         from the trainer, when it stepped
    time/<stage>                       seconds: rollouts, trees, advantages, train, weights, checkpoint,
                                       step; time/verify is the verify share of the rollouts stage
                                       (rollouts wall time x verify seconds / rollout seconds: rollouts
                                       run concurrently, so verify has no wall time of its own)
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import fmean, pstdev
from typing import Any

from harnessrl.types import HarnessName, Rollout, RolloutStatus

PASS_THRESHOLD = 1.0
"""A rollout passes at this reward or above (the eval's default `pass_threshold`)."""
TRAINER_KEYS = (
    "mismatch/abs_mean",
    "mismatch/abs_max",
    "mismatch/frac_truncated",
    "tis/mean",
    "entropy",
    "kl/k3",
    "grad_norm",
    "loss/total",
    "lr",
)
"""Trainer metrics copied into the scalars (those the trainer reported)."""


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
    }


def _put(out: dict[str, float], key: str, value: Any) -> None:
    if isinstance(value, bool):
        out[key] = float(value)
    elif isinstance(value, int | float):
        out[key] = float(value)


def scalars(record: Mapping[str, Any]) -> dict[str, float]:
    """The flat view of one metrics line (tags in the module docstring); missing values are left out."""
    out: dict[str, float] = {}
    reward = record.get("reward") or {}
    _put(out, "reward/mean", reward.get("mean"))
    _put(out, "reward/std", reward.get("std"))
    got = record.get("outcomes") or {}
    for kind, ms in (got.get("reward_by_kind") or {}).items():
        _put(out, f"reward/{kind}/mean", ms.get("mean"))
        _put(out, f"reward/{kind}/std", ms.get("std"))
    _put(out, "reward/group_std", got.get("group_reward_std"))
    _put(out, "pass_rate", got.get("pass_rate"))
    for k, v in (record.get("groups") or {}).items():
        _put(out, f"groups/{k}", v)
    tree = record.get("tree") or {}
    trainer = record.get("trainer") or {}
    _put(out, "tokens/per_call", tree.get("tokens_per_call"))
    _put(out, "tokens/unique", tree.get("tokens_unique"))
    _put(out, "tokens/trained", trainer.get("trained_tokens", 0))
    _put(out, "tokens/sampled", got.get("tokens_sampled"))
    _put(out, "tokens/per_call_mean", got.get("tokens_per_call_mean"))
    if tree.get("tokens_unique"):
        out["tokens/dedup_ratio"] = tree["tokens_per_call"] / tree["tokens_unique"]
    for label, n in (record.get("status") or {}).items():
        _put(out, f"status/{label}", n)
    for key in TRAINER_KEYS:
        _put(out, key, trainer.get(key))
    times = record.get("time") or {}
    for stage, sec in times.items():
        _put(out, f"time/{stage}", sec)
    secs = got.get("seconds") or {}
    busy = float(secs.get("agent", 0.0)) + float(secs.get("verify", 0.0))
    if busy > 0 and "rollouts" in times:
        out["time/verify"] = float(times["rollouts"]) * float(secs.get("verify", 0.0)) / busy
    return out


class MetricsSink:
    """Appends each step's record to `<out_dir>/metrics.jsonl` and its scalars to TensorBoard event
    files under `<out_dir>/tb` (`report.tbevents`: no extra dependency)."""

    def __init__(self, out_dir: str | Path) -> None:
        from harnessrl.report.tbevents import EventWriter

        self.path = Path(out_dir) / "metrics.jsonl"
        self.events = EventWriter(Path(out_dir) / "tb")

    def write(self, record: Mapping[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
        self.events.scalars(int(record["step"]), scalars(record))
